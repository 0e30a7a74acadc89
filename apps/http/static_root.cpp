#include "static_root.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <stdexcept>
#include <system_error>
#include <utility>

namespace spindle::apps::http {
namespace {

int hex_digit(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// `target` percent-decoded and cut into segments, rejoined with '/' below
// the root: nullopt for a path that is not absolute, a malformed escape, a
// NUL, or a ".." segment. Empty and "." segments are dropped; a path that
// ends in '/' gets "index.html".
std::optional<std::string> relative_path(std::string_view target) {
  if (target.empty() || target.front() != '/') return std::nullopt;
  std::string decoded;
  decoded.reserve(target.size());
  for (std::size_t i = 0; i < target.size(); ++i) {
    char c = target[i];
    if (c == '%') {
      if (i + 2 >= target.size()) return std::nullopt;
      const int hi = hex_digit(target[i + 1]);
      const int lo = hex_digit(target[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      c = static_cast<char>(hi * 16 + lo);
      i += 2;
    }
    if (c == '\0') return std::nullopt;
    decoded += c;
  }
  std::string rel;
  std::size_t start = 0;
  while (start <= decoded.size()) {
    const std::size_t slash = std::min(decoded.find('/', start), decoded.size());
    const std::string_view segment(decoded.data() + start, slash - start);
    if (segment == "..") return std::nullopt;
    if (!segment.empty() && segment != ".") {
      rel += '/';
      rel += segment;
    }
    start = slash + 1;
  }
  if (decoded.back() == '/') rel += "/index.html";
  return rel;
}

// The path the kernel has for the open `fd` (every symlink resolved).
std::optional<std::string> real_path_of(int fd) {
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  std::array<char, 4096> buf;
  const ssize_t n = ::readlink(link.c_str(), buf.data(), buf.size());
  if (n <= 0 || static_cast<std::size_t>(n) == buf.size()) return std::nullopt;
  return std::string(buf.data(), static_cast<std::size_t>(n));
}

}  // namespace

StaticRoot StaticRoot::open(const std::filesystem::path& dir) {
  std::error_code ec;
  auto real = std::filesystem::canonical(dir, ec);
  if (ec) throw std::runtime_error("--root " + dir.string() + ": " + ec.message());
  if (!std::filesystem::is_directory(real, ec)) {
    throw std::runtime_error("--root " + dir.string() + ": not a directory");
  }
  std::string s = real.string();
  if (s.size() > 1 && s.back() == '/') s.pop_back();
  return StaticRoot(s == "/" ? std::string() : std::move(s));
}

StaticFile StaticRoot::find(std::string_view target) const {
  StaticFile out;
  const auto rel = relative_path(target);
  if (!rel) return out;
  // O_NONBLOCK: opening a FIFO does not wait for a writer (it is then not a
  // regular file, and not served).
  auto file = fs::File::open(real_ + *rel, O_RDONLY | O_NONBLOCK);
  if (!file) {
    if (file.error() == std::errc::permission_denied) out.status = Status::kForbidden;
    return out;
  }
  auto st = file->stat();
  if (!st || !st->is_regular()) return out;
  const auto real = real_path_of(file->native_handle());
  if (!real || real->size() <= real_.size() || real->compare(0, real_.size(), real_) != 0 ||
      (*real)[real_.size()] != '/') {
    out.status = Status::kForbidden;
    return out;
  }
  // Reads of a regular file opened O_NONBLOCK would refuse to wait for the
  // disk (io_uring answers EAGAIN): the flag goes once the file is known.
  if (::fcntl(file->native_handle(), F_SETFL, 0) != 0) return out;
  out.status = Status::kOk;
  out.size = st->size;
  out.content_type = content_type_of(*rel);
  out.file = std::move(*file);
  return out;
}

std::string_view content_type_of(std::string_view path) noexcept {
  static constexpr std::pair<std::string_view, std::string_view> kTypes[] = {
      {".html", "text/html; charset=utf-8"},
      {".htm", "text/html; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".json", "application/json"},
      {".txt", "text/plain; charset=utf-8"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".jpg", "image/jpeg"},
      {".jpeg", "image/jpeg"},
      {".gif", "image/gif"},
      {".webp", "image/webp"},
      {".ico", "image/x-icon"},
      {".wasm", "application/wasm"},
      {".pdf", "application/pdf"},
  };
  const std::size_t slash = path.rfind('/');
  const std::size_t dot = path.rfind('.');
  if (dot != std::string_view::npos && (slash == std::string_view::npos || dot > slash)) {
    const std::string_view ext = path.substr(dot);
    for (const auto& [e, type] : kTypes) {
      if (ext.size() == e.size() &&
          std::equal(ext.begin(), ext.end(), e.begin(), [](char a, char b) {
            return std::tolower(static_cast<unsigned char>(a)) == b;
          })) {
        return type;
      }
    }
  }
  return "application/octet-stream";
}

}  // namespace spindle::apps::http
