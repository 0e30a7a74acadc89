// Barrier: a reusable rendezvous of a fixed number of fibers and plain threads.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "spindle/base/result.hpp"
#include "spindle/base/thread_annotations.hpp"
#include "spindle/sched/detail/spinlock.hpp"
#include "spindle/sched/detail/wait.hpp"

namespace spindle {

// Thread-safe. Each phase ends when `participants` calls have arrived: the
// last arrival (the phase's leader) returns at once with true and releases
// the others, which return false, as tokio's and Rust's Barrier report
// is_leader(). Exactly one caller per completed phase gets true, so it can do
// the phase's completion step (what std::barrier's completion function does,
// but after the others are released). The barrier is then ready for the next
// phase. A plain thread blocks on a futex where a fiber parks.
//
// A waiter that stops waiting (deadline, abort) withdraws its arrival: the
// phase still needs `participants` arrivals, and the caller may arrive again.
// If the phase completed before it could withdraw, its arrival stands and the
// call returns false like any released waiter.
class Barrier {
 public:
  // participants > 0.
  explicit Barrier(std::size_t participants) noexcept;

  // true for the phase's leader, false for the others; errc::aborted if the
  // fiber is aborted (checked first).
  // Suspends: until the phase's last arrival, or abort.
  Result<bool> arrive_and_wait() { return arrive_and_wait_until(kNoDeadline); }
  // As arrive_and_wait(); errc::timed_out if the deadline passed first.
  // Suspends: until the phase's last arrival, the deadline, or abort.
  Result<bool> arrive_and_wait_until(Deadline deadline);
  Result<bool> arrive_and_wait_for(std::chrono::nanoseconds timeout) {
    return arrive_and_wait_until(Clock::now() + timeout);
  }

  std::size_t participants() const noexcept { return participants_; }
  // Phases completed so far.
  std::uint64_t phase() const noexcept;

 private:
  const std::size_t participants_;
  mutable detail::SpinLock lock_;
  // Invariant (under lock_): arrived_ < participants_; exactly the arrivals
  // of the current phase wait in waiters_ (timed-out ones until they unlink).
  std::size_t arrived_ SPINDLE_GUARDED_BY(lock_) = 0;
  std::uint64_t phase_ SPINDLE_GUARDED_BY(lock_) = 0;
  detail::WaitQueue waiters_ SPINDLE_GUARDED_BY(lock_);
};

}  // namespace spindle
