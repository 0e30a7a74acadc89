// Interval: a periodic timer for a fiber (or a plain thread), with a stated
// policy for missed ticks.
#pragma once

#include <chrono>
#include <cstdint>

#include "spindle/base/result.hpp"
#include "spindle/base/time.hpp"

namespace spindle {

// What an Interval does after a missed tick. Tick k of an Interval is due at
// start + k * period; a tick is missed when, by the time tick() returns the
// tick before it, its own time has passed too (the caller fell a whole
// period or more behind). Without a miss the next tick is due one period
// after the last one's due time, whatever the policy.
enum class MissedTick : std::uint8_t {
  // Catch up: every missed tick is returned, at once, one per tick() call,
  // until the ticks are on time again; no tick is lost. The default (tokio's).
  kBurst,
  // Start again from now: the next tick is due one period after the late
  // tick was returned; later ticks keep that new spacing. No burst.
  kDelay,
  // Stay on the original grid: the missed ticks are dropped and the next tick
  // is the first grid time after the late tick was returned. No burst.
  kSkip,
};

// Not thread-safe: one fiber or thread ticks it at a time. The first tick is
// due at the start (construction, unless given), so the first tick() returns
// at once. Sleeps with this_fiber::sleep_until: a plain thread sleeps.
class Interval {
 public:
  // period > 0.
  explicit Interval(std::chrono::nanoseconds period, MissedTick missed = MissedTick::kBurst)
      : Interval(Clock::now(), period, missed) {}
  Interval(Deadline start, std::chrono::nanoseconds period,
           MissedTick missed = MissedTick::kBurst) noexcept;

  // The due time of the tick it returns (not the time it returned), or
  // errc::aborted if the fiber is aborted (checked first; the tick is not
  // consumed).
  // Suspends: until the next tick is due, or abort.
  Result<Deadline> tick();

  // When the next tick is due.
  Deadline next() const noexcept { return next_; }
  std::chrono::nanoseconds period() const noexcept { return period_; }
  MissedTick missed_tick() const noexcept { return missed_; }

 private:
  Deadline next_;
  std::chrono::nanoseconds period_;
  MissedTick missed_;
};

}  // namespace spindle
