// Simulation: the state of one deterministic run (spindle::sim): the seeded
// generator that picks which ready fiber runs next, the virtual clock, and
// the digest of the run's steps. Internal: spindle::sim::Runtime owns one and
// hands it to the scheduler it runs.
//
// Thread-affine: made, used and destroyed on the one thread that runs the
// simulation. Clock::now() reads its time there (detail::virtual_now) while
// a VirtualTime scope is open.
#pragma once

#include <chrono>
#include <cstdint>

#include "spindle/base/time.hpp"

namespace spindle::detail {

class Simulation {
 public:
  // Virtual time at the start of every run: far from the clock's zero, so no
  // deadline computed by subtraction lands before it.
  static constexpr std::chrono::nanoseconds kStart = std::chrono::hours(24);

  explicit Simulation(std::uint64_t seed) noexcept : seed_(seed) {
    std::uint64_t x = seed;
    for (std::uint64_t& word : state_) word = split_mix(x);
  }

  std::uint64_t seed() const noexcept { return seed_; }

  // The next value of the run's generator (xoshiro256**).
  std::uint64_t next() noexcept {
    const std::uint64_t result = rotl(state_[1] * 5, 7) * 9;
    const std::uint64_t t = state_[1] << 17;
    state_[2] ^= state_[0];
    state_[3] ^= state_[1];
    state_[1] ^= state_[2];
    state_[0] ^= state_[3];
    state_[2] ^= t;
    state_[3] = rotl(state_[3], 45);
    return result;
  }
  // In [0, n), n > 0; uniform but for a bias of n / 2^64.
  std::uint64_t below(std::uint64_t n) noexcept { return next() % n; }

  Deadline now() const noexcept { return Deadline(now_); }
  // Moves virtual time forward to `t`; an earlier `t` leaves it.
  void advance_to(Deadline t) noexcept {
    if (t.time_since_epoch() > now_) now_ = t.time_since_epoch();
  }

  // Folds one event of the run into the digest: a fiber's turn (its id), or
  // what another component of the simulation records.
  void record(std::uint64_t event) noexcept {
    std::uint64_t x = digest_ ^ event ^ static_cast<std::uint64_t>(now_.count());
    digest_ = split_mix(x);
    ++steps_;
  }
  // Equal for two runs of one seed and one program; differs, with
  // overwhelming likelihood, when their events or times differ.
  std::uint64_t digest() const noexcept { return digest_; }
  // Events recorded: fiber turns and the rest.
  std::uint64_t steps() const noexcept { return steps_; }

  // Makes Clock::now() on this thread read the simulation's time while it
  // lives.
  class VirtualTime {
   public:
    explicit VirtualTime(const Simulation& s) noexcept : saved_(virtual_now) {
      virtual_now = &s.now_;
    }
    ~VirtualTime() { virtual_now = saved_; }
    VirtualTime(const VirtualTime&) = delete;
    VirtualTime& operator=(const VirtualTime&) = delete;

   private:
    const std::chrono::nanoseconds* saved_;
  };

 private:
  static std::uint64_t rotl(std::uint64_t x, int k) noexcept { return (x << k) | (x >> (64 - k)); }
  static std::uint64_t split_mix(std::uint64_t& x) noexcept {
    std::uint64_t z = (x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  const std::uint64_t seed_;
  std::uint64_t state_[4];
  std::chrono::nanoseconds now_ = kStart;
  std::uint64_t digest_ = 0;
  std::uint64_t steps_ = 0;
};

}  // namespace spindle::detail
