// Event: a manual-reset event for fibers and plain threads.
#pragma once

#include <atomic>
#include <chrono>

#include "spindle/base/result.hpp"
#include "spindle/base/thread_annotations.hpp"
#include "spindle/sched/detail/spinlock.hpp"
#include "spindle/sched/detail/wait.hpp"

namespace spindle {

// Thread-safe. set() releases every waiter and every later wait() until reset().
// A plain thread blocks on a futex where a fiber parks. set(), reset() and
// is_set() never suspend.
class Event {
 public:
  Event() = default;

  void set() noexcept;
  void reset() noexcept;
  bool is_set() const noexcept { return set_.load(std::memory_order_acquire); }

  // errc::aborted if the fiber is aborted before the event is set.
  // Suspends: until set or abort.
  Result<void> wait() { return detail::untimed(wait_until(kNoDeadline)); }
  // true if set, false if the deadline passed first; errc::aborted.
  // Suspends: until set, the deadline, or abort.
  Result<bool> wait_until(Deadline deadline);
  Result<bool> wait_for(std::chrono::nanoseconds timeout) {
    return wait_until(Clock::now() + timeout);
  }

 private:
  friend class EventCase;

  detail::SpinLock lock_;
  // Written under lock_; release pairs with the acquire in is_set().
  std::atomic<bool> set_{false};
  detail::WaitQueue waiters_ SPINDLE_GUARDED_BY(lock_);
};

}  // namespace spindle
