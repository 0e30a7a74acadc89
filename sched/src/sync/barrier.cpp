#include "spindle/sched/barrier.hpp"

#include "spindle/base/assert.hpp"
#include "spindle/base/lock_guard.hpp"

namespace spindle {

Barrier::Barrier(std::size_t participants) noexcept : participants_(participants) {
  SPINDLE_ASSERT(participants > 0, "a Barrier needs at least one participant");
}

std::uint64_t Barrier::phase() const noexcept {
  LockGuard guard(lock_);
  return phase_;
}

Result<bool> Barrier::arrive_and_wait_until(Deadline deadline) {
  if (detail::current_aborted()) return failure(errc::aborted);
  lock_.lock();
  if (++arrived_ == participants_) {
    arrived_ = 0;
    ++phase_;
    waiters_.notify_all();
    lock_.unlock();
    return true;
  }
  const std::uint64_t phase = phase_;
  detail::WaitNode node;
  const detail::WakeReason reason =
      detail::wait_in(waiters_, node, lock_, deadline, detail::ParkKind::kInterruptible, "barrier");
  if (reason == detail::WakeReason::kNotified) return false;
  LockGuard guard(lock_);
  if (phase_ != phase) return false;  // completed with this arrival counted
  --arrived_;
  return failure(reason == detail::WakeReason::kAborted ? errc::aborted : errc::timed_out);
}

}  // namespace spindle
