#include "spindle/sched/semaphore.hpp"

#include "spindle/base/lock_guard.hpp"

namespace spindle {

Result<bool> Semaphore::acquire_until(Deadline deadline) {
  // A notify hands a waiter one permit (release() does not add it to permits_).
  return detail::wait_unless(waiters_, lock_, deadline, "semaphore",
                             [this]() SPINDLE_REQUIRES(lock_) {
                               if (permits_ == 0 || !waiters_.empty()) return false;
                               --permits_;
                               return true;
                             });
}

bool Semaphore::try_acquire() noexcept {
  LockGuard guard(lock_);
  const bool got = permits_ > 0 && waiters_.empty();
  if (got) --permits_;
  return got;
}

void Semaphore::release(std::size_t n) noexcept {
  LockGuard guard(lock_);
  while (n > 0 && waiters_.notify_one()) --n;
  permits_ += n;
}

std::size_t Semaphore::available() const noexcept {
  LockGuard guard(lock_);
  return permits_;
}

}  // namespace spindle
