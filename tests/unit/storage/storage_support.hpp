// Helpers for the storage tests: temporary directories, byte/string
// conversions, and raw file access for the test thread (never a fiber: these
// are blocking syscalls).
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "raw_file.hpp"
#include "runtime_harness.hpp"
#include "temp_dir.hpp"

namespace spindle::test {

inline std::span<const std::byte> bytes(std::string_view s) {
  return std::as_bytes(std::span(s.data(), s.size()));
}

inline std::string str(std::span<const std::byte> b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

// The file of blob `name` (hex-named) in `partition` under `dir`.
inline std::filesystem::path blob_path(const std::filesystem::path& dir, std::string_view partition,
                                       std::string_view hex_name) {
  return dir / std::string(partition) / std::string(hex_name);
}

// Raw file access from the test thread.
inline void write_file(const std::filesystem::path& p, std::string_view data) {
  std::filesystem::create_directories(p.parent_path());
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  REQUIRE(fd >= 0);
  REQUIRE(::write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size()));
  ::close(fd);
}

inline void patch_file(const std::filesystem::path& p, off_t offset, std::string_view data) {
  const int fd = ::open(p.c_str(), O_WRONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(::pwrite(fd, data.data(), data.size(), offset) == static_cast<ssize_t>(data.size()));
  ::close(fd);
}

}  // namespace spindle::test
