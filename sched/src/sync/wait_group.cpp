#include "spindle/sched/wait_group.hpp"

#include "spindle/base/assert.hpp"
#include "spindle/base/lock_guard.hpp"

namespace spindle {

void WaitGroup::add(std::int64_t n) noexcept {
  LockGuard guard(lock_);
  count_ += n;
  SPINDLE_ASSERT(count_ >= 0, "WaitGroup count went negative");
  if (count_ == 0) waiters_.notify_all();
}

std::int64_t WaitGroup::count() const noexcept {
  LockGuard guard(lock_);
  return count_;
}

Result<bool> WaitGroup::wait_until(Deadline deadline) {
  return detail::wait_unless(waiters_, lock_, deadline, "wait_group",
                             [this]() SPINDLE_REQUIRES(lock_) { return count_ == 0; });
}

}  // namespace spindle
