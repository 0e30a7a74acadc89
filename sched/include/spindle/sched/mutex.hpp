// Mutex: a fiber-aware lock (std Lockable) for fibers and plain threads.
#pragma once

#include <chrono>

#include "spindle/base/result.hpp"
#include "spindle/base/thread_annotations.hpp"
#include "spindle/base/time.hpp"
#include "spindle/sched/detail/spinlock.hpp"
#include "spindle/sched/detail/wait.hpp"

namespace spindle {

// Thread-safe. A fiber blocked in lock() parks (its worker runs other fibers);
// a plain thread blocks on a futex. FIFO: unlock() hands the mutex straight to
// the longest waiter. Works with std::unique_lock and std::scoped_lock. Not
// recursive. May be unlocked by a different fiber or thread than locked it.
// try_lock() and unlock() never suspend.
class Mutex {
 public:
  Mutex() = default;

  // Abort does not end this wait, nor does a deadline scope
  // (this_fiber::with_deadline): lock() always returns holding the mutex.
  // Suspends: until the mutex is handed over.
  void lock() noexcept;
  bool try_lock() noexcept;
  // true once the mutex is held; false at `deadline`; errc::aborted.
  // Suspends: until the mutex is handed over, the deadline, or abort.
  Result<bool> try_lock_until(Deadline deadline);
  Result<bool> try_lock_for(std::chrono::nanoseconds timeout) {
    return try_lock_until(deadline_after(timeout));
  }
  void unlock() noexcept;

 private:
  detail::SpinLock lock_;
  bool locked_ SPINDLE_GUARDED_BY(lock_) = false;
  detail::WaitQueue waiters_ SPINDLE_GUARDED_BY(lock_);
};

}  // namespace spindle
