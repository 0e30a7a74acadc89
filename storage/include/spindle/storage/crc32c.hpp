// crc32c(): the CRC-32C (Castagnoli) checksum that guards blob headers, and
// that applications may use for their own records (apps/kv does).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace spindle::storage {

// CRC-32C of `data`, continuing from `crc` (the value of a previous call, or 0
// to start). Uses the SSE4.2 instruction when the CPU has it. Thread-safe;
// never suspends.
std::uint32_t crc32c(std::span<const std::byte> data, std::uint32_t crc = 0) noexcept;

inline std::uint32_t crc32c(std::string_view data, std::uint32_t crc = 0) noexcept {
  return crc32c(std::as_bytes(std::span(data.data(), data.size())), crc);
}

}  // namespace spindle::storage
