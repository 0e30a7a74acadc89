// CondVar: a condition variable for spindle::Mutex, for fibers and plain threads.
#pragma once

#include <chrono>
#include <mutex>

#include "spindle/base/result.hpp"
#include "spindle/base/thread_annotations.hpp"
#include "spindle/sched/detail/spinlock.hpp"
#include "spindle/sched/detail/wait.hpp"
#include "spindle/sched/mutex.hpp"

namespace spindle {

// Thread-safe. Every wait returns with `lock` held again, however it ended
// (re-locking the Mutex may park again). A plain thread blocks on a futex
// where a fiber parks. notify_one() and notify_all() never suspend.
class CondVar {
 public:
  CondVar() = default;

  // Returns {} when notified (or spuriously), errc::aborted if the fiber is aborted.
  // Suspends: until notified or aborted.
  Result<void> wait(std::unique_lock<Mutex>& lock) {
    return detail::untimed(wait_until(lock, kNoDeadline));
  }

  // Waits until pred() holds. errc::aborted if the fiber is aborted first.
  // Suspends: until pred() holds or abort.
  template <class Pred>
  Result<void> wait(std::unique_lock<Mutex>& lock, Pred pred) {
    while (!pred()) {
      if (auto r = wait(lock); !r) return r;
    }
    return {};
  }

  // true when notified, false when the deadline passed, errc::aborted.
  // Suspends: until notified, the deadline, or abort.
  Result<bool> wait_until(std::unique_lock<Mutex>& lock, Deadline deadline);
  Result<bool> wait_for(std::unique_lock<Mutex>& lock, std::chrono::nanoseconds timeout) {
    return wait_until(lock, Clock::now() + timeout);
  }

  // pred()'s final value: false only if the deadline passed with pred() false.
  // Suspends: until pred() holds, the deadline, or abort.
  template <class Pred>
  Result<bool> wait_until(std::unique_lock<Mutex>& lock, Deadline deadline, Pred pred) {
    while (!pred()) {
      auto r = wait_until(lock, deadline);
      if (!r) return r;
      if (!*r) return pred();
    }
    return true;
  }
  template <class Pred>
  Result<bool> wait_for(std::unique_lock<Mutex>& lock, std::chrono::nanoseconds timeout,
                        Pred pred) {
    return wait_until(lock, Clock::now() + timeout, std::move(pred));
  }

  void notify_one() noexcept;
  void notify_all() noexcept;

 private:
  detail::SpinLock lock_;
  detail::WaitQueue waiters_ SPINDLE_GUARDED_BY(lock_);
};

}  // namespace spindle
