#include "spindle/sched/condvar.hpp"

#include "spindle/base/lock_guard.hpp"

namespace spindle {

Result<bool> CondVar::wait_until(std::unique_lock<Mutex>& lock, Deadline deadline) {
  if (detail::current_aborted()) return failure(errc::aborted);
  detail::WaitNode node;
  lock_.lock();
  // Queued before the mutex is released, so a notify after the unlock finds us.
  lock.unlock();
  const auto reason =
      detail::wait_in(waiters_, node, lock_, deadline, detail::ParkKind::kInterruptible, "condvar");
  lock.lock();
  return detail::timed_result(reason);
}

void CondVar::notify_one() noexcept {
  LockGuard guard(lock_);
  waiters_.notify_one();
}

void CondVar::notify_all() noexcept {
  LockGuard guard(lock_);
  waiters_.notify_all();
}

}  // namespace spindle
