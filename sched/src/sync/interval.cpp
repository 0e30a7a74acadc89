#include "spindle/sched/interval.hpp"

#include "spindle/base/assert.hpp"
#include "spindle/sched/this_fiber.hpp"

namespace spindle {

Interval::Interval(Deadline start, std::chrono::nanoseconds period, MissedTick missed) noexcept
    : next_(start), period_(period), missed_(missed) {
  SPINDLE_ASSERT(period > std::chrono::nanoseconds::zero(), "an Interval needs a period > 0");
}

Result<Deadline> Interval::tick() {
  if (auto r = this_fiber::sleep_until(next_); !r) return failure(r.error());
  const Deadline due = next_;
  const Deadline now = Clock::now();
  // Whole periods the caller is behind: 0 unless the next tick is missed too.
  const auto behind = (now - due) / period_;
  if (behind == 0 || missed_ == MissedTick::kBurst) {
    next_ = due + period_;
  } else if (missed_ == MissedTick::kDelay) {
    next_ = now + period_;
  } else {
    next_ = due + (behind + 1) * period_;
  }
  return due;
}

}  // namespace spindle
