// Fuzzes the blob header parser (storage/include/spindle/storage/header.hpp):
// parse_header and is_torn_creation on inputs of at most kHeaderSize bytes
// (longer ones are cut there; the input is also padded with zeros to a full
// header, so that short inputs reach the checks past kTooShort). Checks: a
// header that parses is canonical (encode_header of its version gives the
// same bytes), and canonical headers parse back; every prefix of a canonical
// header is a torn creation; kTooShort exactly for short inputs; every defect
// has a description.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "chunks.hpp"
#include "spindle/storage/header.hpp"

namespace {

namespace storage = spindle::storage;

void check(std::span<const std::byte> bytes) {
  const auto parsed = storage::parse_header(bytes);
  const bool torn = storage::is_torn_creation(bytes);
  if (parsed) {
    const storage::HeaderBytes canonical = storage::encode_header(*parsed);
    SPINDLE_FUZZ_CHECK(std::equal(canonical.begin(), canonical.end(), bytes.begin(), bytes.end()));
    SPINDLE_FUZZ_CHECK(torn);  // a whole header is its own (longest) prefix
  } else {
    SPINDLE_FUZZ_CHECK(!storage::describe(parsed.error()).empty());
    SPINDLE_FUZZ_CHECK((parsed.error() == storage::HeaderDefect::kTooShort) ==
                       (bytes.size() < storage::kHeaderSize));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto input = std::as_bytes(std::span(data, std::min(size, storage::kHeaderSize)));
  check(input);
  storage::HeaderBytes padded{};
  std::copy(input.begin(), input.end(), padded.begin());
  check(padded);
  // Round trip: the header of the version in the input's first two bytes.
  const auto version = static_cast<std::uint16_t>(size >= 2 ? data[0] << 8 | data[1] : size);
  const storage::HeaderBytes h = storage::encode_header(version);
  const auto back = storage::parse_header(h);
  SPINDLE_FUZZ_CHECK(back && *back == version);
  // Every prefix of a canonical header is a torn creation (a crash while writing it).
  SPINDLE_FUZZ_CHECK(
      storage::is_torn_creation(std::span(h).first(size % (storage::kHeaderSize + 1))));
  return 0;
}
