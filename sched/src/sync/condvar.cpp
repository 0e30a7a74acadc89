#include "spindle/sched/condvar.hpp"

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

Result<void> CondVar::wait(std::unique_lock<Mutex>& lock) {
  auto r = wait_until(lock, kNoDeadline);
  if (!r) return failure(r.error());
  return {};
}

void CondVar::notify_one() noexcept {
  lock_.lock();
  waiters_.notify_one();
  lock_.unlock();
}

void CondVar::notify_all() noexcept {
  lock_.lock();
  waiters_.notify_all();
  lock_.unlock();
}

}  // namespace spindle
