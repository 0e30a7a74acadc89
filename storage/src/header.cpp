// The blob header: encoding, parsing, and recognising a torn creation.
#include "spindle/storage/header.hpp"

#include <algorithm>

#include "spindle/storage/crc32c.hpp"

namespace spindle::storage {
namespace {

constexpr std::size_t kChecked = 8;  // magic, runtime version, blob version
constexpr std::size_t kPrefix = 12;  // ... and their CRC

std::uint16_t be16(std::byte hi, std::byte lo) noexcept {
  return static_cast<std::uint16_t>(std::to_integer<unsigned>(hi) << 8 |
                                    std::to_integer<unsigned>(lo));
}

}  // namespace

HeaderBytes encode_header(std::uint16_t blob_version) noexcept {
  HeaderBytes h{};
  std::copy(kMagic.begin(), kMagic.end(), h.begin());
  h[4] = std::byte(kRuntimeVersion >> 8);
  h[5] = std::byte(kRuntimeVersion & 0xFF);
  h[6] = std::byte(blob_version >> 8);
  h[7] = std::byte(blob_version & 0xFF);
  const std::uint32_t crc = crc32c(std::span(h.data(), kChecked));
  h[8] = std::byte(crc >> 24);
  h[9] = std::byte(crc >> 16 & 0xFF);
  h[10] = std::byte(crc >> 8 & 0xFF);
  h[11] = std::byte(crc & 0xFF);
  return h;
}

std::string_view describe(HeaderDefect defect) noexcept {
  switch (defect) {
    case HeaderDefect::kTooShort:
      return "shorter than the 4096-byte header";
    case HeaderDefect::kBadMagic:
      return "bad magic";
    case HeaderDefect::kBadRuntimeVersion:
      return "unsupported runtime version";
    case HeaderDefect::kBadChecksum:
      return "header checksum mismatch";
    case HeaderDefect::kBadPadding:
      return "nonzero header padding";
  }
  return "unknown header defect";
}

std::expected<std::uint16_t, HeaderDefect> parse_header(std::span<const std::byte> b) noexcept {
  if (b.size() < kHeaderSize) return std::unexpected(HeaderDefect::kTooShort);
  if (!std::equal(kMagic.begin(), kMagic.end(), b.begin()))
    return std::unexpected(HeaderDefect::kBadMagic);
  if (be16(b[4], b[5]) != kRuntimeVersion) return std::unexpected(HeaderDefect::kBadRuntimeVersion);
  const std::uint32_t crc = crc32c(b.first(kChecked));
  const std::uint32_t stored = std::uint32_t{be16(b[8], b[9])} << 16 | be16(b[10], b[11]);
  if (crc != stored) return std::unexpected(HeaderDefect::kBadChecksum);
  const auto padding = b.subspan(kPrefix, kHeaderSize - kPrefix);
  if (std::any_of(padding.begin(), padding.end(), [](std::byte x) { return x != std::byte{0}; }))
    return std::unexpected(HeaderDefect::kBadPadding);
  return be16(b[6], b[7]);
}

bool is_torn_creation(std::span<const std::byte> b) noexcept {
  if (b.size() > kHeaderSize) return false;
  // The written prefix ends at the last nonzero byte; everything after it is zero.
  std::size_t written = b.size();
  while (written > 0 && b[written - 1] == std::byte{0}) --written;
  if (written > kPrefix) return false;  // the padding is always zero
  // The canonical bytes 0-7 depend on the blob version only through bytes 6-7;
  // take it from the bytes themselves (missing ones as zero). A prefix that
  // stops before byte 8 is not compared beyond itself, so this is exact.
  auto at = [&](std::size_t i) { return i < b.size() ? b[i] : std::byte{0}; };
  const HeaderBytes canonical = encode_header(be16(at(6), at(7)));
  return std::equal(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(written), canonical.begin());
}

}  // namespace spindle::storage
