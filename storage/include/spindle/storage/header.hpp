// The blob header: the first 4096 bytes of every blob file. The caller's
// data starts right after it, at file offset 4096 (page aligned).
//
//   bytes 0-3     magic "SPNB"
//   bytes 4-5     runtime (layout) version, u16 big-endian: 1
//   bytes 6-7     blob version, u16 big-endian (the application's)
//   bytes 8-11    CRC-32C of bytes 0-7, big-endian
//   bytes 12-4095 zero
//
// This is the reference's V1 layout (commonware's runtime) with spindle's
// own magic and CRC-32C; there is no legacy layout to read.
//
// Pure functions on bytes: thread-safe, no I/O, never suspend.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <expected>
#include <span>
#include <string_view>

namespace spindle::storage {

inline constexpr std::size_t kHeaderSize = 4096;
inline constexpr std::uint16_t kRuntimeVersion = 1;
inline constexpr std::array<std::byte, 4> kMagic{std::byte{'S'}, std::byte{'P'}, std::byte{'N'},
                                                 std::byte{'B'}};

// The blob versions an open accepts, inclusive. A new blob is stamped with `max`.
struct VersionRange {
  std::uint16_t min = 0;
  std::uint16_t max = 0;
  constexpr bool contains(std::uint16_t v) const noexcept { return min <= v && v <= max; }
};

using HeaderBytes = std::array<std::byte, kHeaderSize>;

// The canonical header of a blob of version `blob_version`.
HeaderBytes encode_header(std::uint16_t blob_version) noexcept;

// Why a header does not parse.
enum class HeaderDefect {
  kTooShort,           // fewer than kHeaderSize bytes
  kBadMagic,           // not "SPNB"
  kBadRuntimeVersion,  // the magic is ours but the layout version is not 1
  kBadChecksum,        // bytes 8-11 are not the CRC of bytes 0-7
  kBadPadding,         // a nonzero byte in 12-4095
};
std::string_view describe(HeaderDefect defect) noexcept;

// The blob version recorded in `bytes` (the start of a blob file), or why it
// is not a valid header. The version is not checked against any range here.
std::expected<std::uint16_t, HeaderDefect> parse_header(std::span<const std::byte> bytes) noexcept;

// True if `bytes` (the whole of a file no longer than kHeaderSize) could be a
// creation cut short by a crash: a prefix of some canonical header followed
// only by zeros (an empty file included). Such a blob is re-created; anything
// else that fails to parse is corruption.
bool is_torn_creation(std::span<const std::byte> bytes) noexcept;

}  // namespace spindle::storage
