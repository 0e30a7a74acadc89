#include "spindle/sched/wait_group.hpp"

#include "spindle/base/assert.hpp"

namespace spindle {

void WaitGroup::add(std::int64_t n) noexcept {
  lock_.lock();
  count_ += n;
  SPINDLE_ASSERT(count_ >= 0, "WaitGroup count went negative");
  if (count_ == 0) waiters_.notify_all();
  lock_.unlock();
}

std::int64_t WaitGroup::count() const noexcept {
  lock_.lock();
  const std::int64_t n = count_;
  lock_.unlock();
  return n;
}

Result<bool> WaitGroup::wait_until(Deadline deadline) {
  if (detail::current_aborted()) return failure(errc::aborted);
  lock_.lock();
  if (count_ == 0) {
    lock_.unlock();
    return true;
  }
  detail::WaitNode node;
  return detail::timed_result(detail::wait_in(waiters_, node, lock_, deadline,
                                              detail::ParkKind::kInterruptible, "wait_group"));
}

Result<void> WaitGroup::wait() {
  auto r = wait_until(kNoDeadline);
  if (!r) return failure(r.error());
  return {};
}

}  // namespace spindle
