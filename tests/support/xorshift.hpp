// Xorshift: a tiny seeded generator for stress tests, so a printed seed
// replays the same choices.
#pragma once

#include <cstdint>

namespace spindle::test {

// Not thread-safe: one per fiber or thread.
struct Xorshift {
  std::uint64_t state;
  explicit Xorshift(std::uint64_t seed) : state(seed | 1) {}
  std::uint64_t next() {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
  }
};

}  // namespace spindle::test
