// Semaphore: a counting semaphore for fibers and plain threads.
#pragma once

#include <chrono>
#include <cstddef>

#include "spindle/base/result.hpp"
#include "spindle/base/thread_annotations.hpp"
#include "spindle/sched/detail/spinlock.hpp"
#include "spindle/sched/detail/wait.hpp"

namespace spindle {

// Thread-safe. FIFO: release() hands permits to the longest waiters first.
// A plain thread blocks on a futex where a fiber parks. try_acquire(),
// release() and available() never suspend.
class Semaphore {
 public:
  explicit Semaphore(std::size_t permits = 0) noexcept : permits_(permits) {}

  // Takes one permit. errc::aborted if the fiber is aborted first.
  // Suspends: until a permit is available.
  Result<void> acquire() { return detail::untimed(acquire_until(kNoDeadline)); }
  // true with a permit, false if the deadline passed first; errc::aborted.
  // Suspends: until a permit, the deadline, or abort.
  Result<bool> acquire_until(Deadline deadline);
  Result<bool> acquire_for(std::chrono::nanoseconds timeout) {
    return acquire_until(Clock::now() + timeout);
  }
  bool try_acquire() noexcept;
  void release(std::size_t n = 1) noexcept;
  std::size_t available() const noexcept;

 private:
  mutable detail::SpinLock lock_;
  std::size_t permits_ SPINDLE_GUARDED_BY(lock_);
  detail::WaitQueue waiters_ SPINDLE_GUARDED_BY(lock_);
};

}  // namespace spindle
