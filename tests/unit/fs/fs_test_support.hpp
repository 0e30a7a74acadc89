// Helpers for the fs tests: byte views, patterned contents, and checks by
// plain system calls (raw_file.hpp; a test may block a worker briefly).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
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

inline std::span<std::byte> writable(std::string& s) {
  return std::as_writable_bytes(std::span(s.data(), s.size()));
}

// `n` bytes that differ with `seed` and repeat only every 251 bytes.
inline std::string pattern(std::size_t n, std::uint32_t seed = 1) {
  std::string s(n, '\0');
  for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i % 251) * 7 + seed * 13);
  return s;
}

// The names in `dir`, sorted, read from the calling thread.
inline std::vector<std::string> names_in(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace spindle::test
