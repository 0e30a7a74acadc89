// spindle's time vocabulary, shared by every layer: the clock deadlines are
// read on, and the deadline that never comes. Constants only; thread-safe.
#pragma once

#include <chrono>

namespace spindle {

using Clock = std::chrono::steady_clock;
// An absolute point on the steady clock; kNoDeadline waits forever.
using Deadline = Clock::time_point;
inline constexpr Deadline kNoDeadline = Deadline::max();

// `timeout` from now; kNoDeadline where that is beyond the clock's range.
inline Deadline deadline_after(std::chrono::nanoseconds timeout) noexcept {
  const Deadline now = Clock::now();
  if (timeout >= kNoDeadline - now) return kNoDeadline;
  return now + std::chrono::duration_cast<Clock::duration>(timeout);
}

}  // namespace spindle
