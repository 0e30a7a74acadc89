#include "spindle/sched/detail/task.hpp"

namespace spindle::detail {

Result<void> Task::wait_done(Deadline deadline) noexcept {
  if (current_aborted()) return failure(errc::aborted);
  if (done()) return {};
  expedite();
  auto ended = wait_unless(joiners_, lock(), deadline, "join", [this]() SPINDLE_REQUIRES(lock()) {
    return done_.load(std::memory_order_relaxed);
  });
  if (!ended) return failure(ended.error());
  if (!*ended) return failure(errc::timed_out);
  return {};
}

void Task::wait_ended() noexcept {
  if (done()) return;
  expedite();
  lock().lock();
  if (done_.load(std::memory_order_relaxed)) {
    lock().unlock();
    return;
  }
  // Uninterruptible and untimed: only complete()'s notify ends it, after
  // done_ is set.
  WaitNode node;
  wait_in(joiners_, node, lock(), kNoDeadline, ParkKind::kUninterruptible, "join");
}

void Task::complete(Outcome outcome, std::exception_ptr error) noexcept {
  lock().lock();
  complete_locked(outcome, std::move(error));
  lock().unlock();
  if (hook_) hook_->task_completed();
}

void Task::close_and_complete(Outcome outcome, std::exception_ptr error) noexcept {
  close_then([&]() SPINDLE_REQUIRES(lock()) { complete_locked(outcome, std::move(error)); });
  if (hook_) hook_->task_completed();
}

void Task::complete_locked(Outcome outcome, std::exception_ptr error) noexcept {
  outcome_ = outcome;
  exception_ = std::move(error);
  // release; pairs with the acquire in done().
  done_.store(true, std::memory_order_release);
  // Under the lock: a joiner whose wait ended otherwise re-takes the lock to
  // unlink its node, so it cannot free the node while we notify it.
  joiners_.notify_all();
}

}  // namespace spindle::detail
