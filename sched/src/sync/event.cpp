#include "spindle/sched/event.hpp"

namespace spindle {

void Event::set() noexcept {
  lock_.lock();
  set_.store(true, std::memory_order_release);
  waiters_.notify_all();
  lock_.unlock();
}

void Event::reset() noexcept {
  lock_.lock();
  set_.store(false, std::memory_order_release);
  lock_.unlock();
}

Result<bool> Event::wait_until(Deadline deadline) {
  if (detail::current_aborted()) return failure(errc::aborted);
  // Always under the lock, even when already set: set() may still be
  // notifying, and the caller may destroy the event once this returns.
  lock_.lock();
  if (set_.load(std::memory_order_relaxed)) {
    lock_.unlock();
    return true;
  }
  detail::WaitNode node;
  return detail::timed_result(
      detail::wait_in(waiters_, node, lock_, deadline, detail::ParkKind::kInterruptible, "event"));
}

Result<void> Event::wait() {
  auto r = wait_until(kNoDeadline);
  if (!r) return failure(r.error());
  return {};
}

}  // namespace spindle
