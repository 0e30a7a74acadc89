#include "spindle/fs/whole_file.hpp"

#include <algorithm>

#include "spindle/fs/file.hpp"

namespace spindle::fs {
namespace {

// The first buffer of a file whose size says nothing (0 in /proc).
constexpr std::size_t kFirstRead = 4096;

std::span<const std::byte> bytes(std::string_view s) noexcept {
  return std::as_bytes(std::span(s.data(), s.size()));
}

}  // namespace

Result<std::string> read_file(const std::filesystem::path& path) {
  auto file = File::open(path);
  if (!file) return std::unexpected(std::move(file.error()));
  auto st = file->stat();
  if (!st) return std::unexpected(std::move(st.error()));
  // One byte beyond the size: the read that finds the end needs no growth.
  std::string out(std::max<std::size_t>(st->size + 1, kFirstRead), '\0');
  std::size_t have = 0;
  for (;;) {
    if (have == out.size()) out.resize(out.size() * 2);
    auto n = file->read(std::as_writable_bytes(std::span(out)).subspan(have));
    if (!n) return std::unexpected(std::move(n.error()));
    if (*n == 0) break;
    have += *n;
  }
  out.resize(have);
  return out;
}

Result<void> write_file(const std::filesystem::path& path, std::span<const std::byte> data,
                        mode_t mode) {
  auto file = File::create(path, mode);
  if (!file) return std::unexpected(std::move(file.error()));
  return file->write_all(data);
}

Result<void> write_file(const std::filesystem::path& path, std::string_view data, mode_t mode) {
  return write_file(path, bytes(data), mode);
}

Result<void> write_file_atomic(const std::filesystem::path& path, std::string_view data,
                               mode_t mode) {
  return write_file_atomic(path, bytes(data), mode);
}

}  // namespace spindle::fs
