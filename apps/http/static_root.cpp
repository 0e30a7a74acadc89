#include "static_root.hpp"

#include <fcntl.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>

#include "spindle/base/unique_fd.hpp"

namespace spindle::apps::http {
namespace {

int hex_digit(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// `target` percent-decoded and cut into segments, rejoined with '/' and
// relative to the root (no leading '/'): nullopt for a path that is not
// absolute, a malformed escape, a NUL, or a ".." segment. Empty and "."
// segments are dropped; a path that ends in '/' gets "index.html".
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
  const auto append = [&rel](std::string_view segment) {
    if (!rel.empty()) rel += '/';
    rel += segment;
  };
  std::size_t start = 0;
  while (start <= decoded.size()) {
    const std::size_t slash = std::min(decoded.find('/', start), decoded.size());
    const std::string_view segment(decoded.data() + start, slash - start);
    if (segment == "..") return std::nullopt;
    if (!segment.empty() && segment != ".") append(segment);
    start = slash + 1;
  }
  if (decoded.back() == '/') append("index.html");
  return rel;
}

}  // namespace

StaticRoot StaticRoot::open(const std::filesystem::path& dir) {
  const int fd = ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    throw std::runtime_error(
        "--root " + dir.string() + ": " +
        (err == ENOTDIR ? std::string("not a directory") : std::system_category().message(err)));
  }
  return StaticRoot(fs::File(UniqueFd(fd), dir));
}

StaticFile StaticRoot::find(std::string_view target) const {
  StaticFile out;
  const auto rel = relative_path(target);
  if (!rel) return out;
  // O_NONBLOCK: opening a FIFO does not wait for a writer (it is then not a
  // regular file, and not served). EXDEV: a symlink led out of the root.
  auto file = fs::File::open_beneath(dir_, *rel, O_RDONLY | O_NONBLOCK);
  if (!file) {
    if (file.error() == std::errc::permission_denied ||
        file.error() == std::errc::cross_device_link) {
      out.status = Status::kForbidden;
    }
    return out;
  }
  // The open file's inode is in memory: its size needs no trip through
  // the I/O backend.
  auto st = file->stat_cached();
  if (!st || !st->is_regular()) return out;
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
