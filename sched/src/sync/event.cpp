#include "spindle/sched/event.hpp"

#include "spindle/base/lock_guard.hpp"

namespace spindle {

void Event::set() noexcept {
  LockGuard guard(lock_);
  set_.store(true, std::memory_order_release);
  waiters_.notify_all();
}

void Event::reset() noexcept {
  LockGuard guard(lock_);
  set_.store(false, std::memory_order_release);
}

Result<bool> Event::wait_until(Deadline deadline) {
  // Checked under the lock even when already set: set() may still be
  // notifying, and the caller may destroy the event once this returns.
  return detail::wait_unless(waiters_, lock_, deadline, "event",
                             [this] { return set_.load(std::memory_order_relaxed); });
}

}  // namespace spindle
