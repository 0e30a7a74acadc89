#include "spindle/sched/mutex.hpp"

#include <utility>

#include "spindle/base/lock_guard.hpp"

namespace spindle {

void Mutex::lock() noexcept {
  lock_.lock();
  if (!locked_) {
    locked_ = true;
    lock_.unlock();
    return;
  }
  detail::WaitNode node;
  // Uninterruptible and untimed: only unlock()'s hand-over ends it.
  detail::wait_in(waiters_, node, lock_, kNoDeadline, detail::ParkKind::kUninterruptible, "mutex");
}

Result<bool> Mutex::try_lock_until(Deadline deadline) {
  return detail::wait_unless(waiters_, lock_, deadline, "mutex", [this]() SPINDLE_REQUIRES(lock_) {
    return !std::exchange(locked_, true);
  });
}

bool Mutex::try_lock() noexcept {
  LockGuard guard(lock_);
  const bool got = !locked_;
  locked_ = true;
  return got;
}

void Mutex::unlock() noexcept {
  LockGuard guard(lock_);
  // Hand-over: the mutex stays locked, now owned by the woken waiter.
  if (!waiters_.notify_one()) locked_ = false;
}

}  // namespace spindle
