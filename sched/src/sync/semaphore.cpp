#include "spindle/sched/semaphore.hpp"

namespace spindle {

Result<bool> Semaphore::acquire_until(Deadline deadline) {
  if (detail::current_aborted()) return failure(errc::aborted);
  lock_.lock();
  if (permits_ > 0 && waiters_.empty()) {
    --permits_;
    lock_.unlock();
    return true;
  }
  detail::WaitNode node;
  // A notify hands this waiter one permit (release() does not add it to permits_).
  return detail::timed_result(detail::wait_in(waiters_, node, lock_, deadline,
                                              detail::ParkKind::kInterruptible, "semaphore"));
}

Result<void> Semaphore::acquire() {
  auto r = acquire_until(kNoDeadline);
  if (!r) return failure(r.error());
  return {};
}

bool Semaphore::try_acquire() noexcept {
  lock_.lock();
  const bool got = permits_ > 0 && waiters_.empty();
  if (got) --permits_;
  lock_.unlock();
  return got;
}

void Semaphore::release(std::size_t n) noexcept {
  lock_.lock();
  while (n > 0 && waiters_.notify_one()) --n;
  permits_ += n;
  lock_.unlock();
}

std::size_t Semaphore::available() const noexcept {
  lock_.lock();
  const std::size_t n = permits_;
  lock_.unlock();
  return n;
}

}  // namespace spindle
