// Chunks: cuts an input into pieces of pseudo-random sizes, as reads from a
// socket would deliver it. The sizes depend only on the input (a hash of it
// seeds the generator), so a crash reproduces from the input alone and the
// seed files stay plain protocol text. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace spindle::fuzz {

class Chunks {
 public:
  explicit Chunks(std::string_view input) noexcept : input_(input) {
    std::uint64_t h = 0xcbf29ce484222325u;  // FNV-1a
    for (char c : input) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3u;
    state_ = h | 1;
  }

  bool done() const noexcept { return at_ == input_.size(); }

  // All that is left, in one piece.
  std::string_view next_all() noexcept {
    const std::string_view piece = input_.substr(at_);
    at_ = input_.size();
    return piece;
  }

  // The next piece: mostly 1-16 bytes, sometimes up to 4 KiB, sometimes all that is left.
  std::string_view next() noexcept {
    const std::size_t left = input_.size() - at_;
    const std::uint64_t r = step();
    std::size_t n;
    switch (r % 8) {
      case 0:
        n = left;
        break;
      case 1:
        n = 1 + (r >> 8) % 4096;
        break;
      default:
        n = 1 + (r >> 8) % 16;
        break;
    }
    if (n > left) n = left;
    const std::string_view piece = input_.substr(at_, n);
    at_ += n;
    return piece;
  }

 private:
  std::uint64_t step() noexcept {  // xorshift64
    state_ ^= state_ << 13;
    state_ ^= state_ >> 7;
    state_ ^= state_ << 17;
    return state_;
  }

  std::string_view input_;
  std::size_t at_ = 0;
  std::uint64_t state_;
};

// Aborts with a message when an invariant of the code under test fails, so
// that libFuzzer reports the input as a crash (in every build type).
#define SPINDLE_FUZZ_CHECK(cond)                                                              \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      std::fprintf(stderr, "fuzz invariant failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                           \
    }                                                                                         \
  } while (0)

}  // namespace spindle::fuzz
