// spindle's time vocabulary, shared by every layer: the clock deadlines are
// read on, and the deadline that never comes. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <ratio>

namespace spindle {

namespace detail {
// The virtual time of the simulation running on this thread (spindle::sim),
// or null: the steady clock's. Set and read only by that thread.
inline constinit thread_local const std::chrono::nanoseconds* virtual_now = nullptr;
}  // namespace detail

// The steady clock, except on a thread that runs a simulation, where it
// reads the simulation's virtual time. Every timer, deadline and timeout of
// spindle is on this clock.
struct Clock {
  using rep = std::int64_t;
  using period = std::nano;
  using duration = std::chrono::nanoseconds;
  using time_point = std::chrono::time_point<Clock>;
  static constexpr bool is_steady = true;

  static time_point now() noexcept {
    if (const std::chrono::nanoseconds* v = detail::virtual_now) [[unlikely]]
      return time_point(*v);
    return time_point(std::chrono::steady_clock::now().time_since_epoch());
  }
};

// An absolute point on Clock; kNoDeadline waits forever.
using Deadline = Clock::time_point;
inline constexpr Deadline kNoDeadline = Deadline::max();

// `timeout` from now; kNoDeadline where that is beyond the clock's range.
inline Deadline deadline_after(std::chrono::nanoseconds timeout) noexcept {
  const Deadline now = Clock::now();
  if (timeout >= kNoDeadline - now) return kNoDeadline;
  return now + std::chrono::duration_cast<Clock::duration>(timeout);
}

}  // namespace spindle
