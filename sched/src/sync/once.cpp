#include "spindle/sched/once.hpp"

#include "spindle/base/lock_guard.hpp"

namespace spindle {

bool Once::begin() noexcept {
  lock_.lock();
  switch (state_.load(std::memory_order_relaxed)) {
    case State::kDone:
      lock_.unlock();
      return false;
    case State::kEmpty:
      state_.store(State::kRunning, std::memory_order_relaxed);
      lock_.unlock();
      return true;
    case State::kRunning:
      break;
  }
  detail::WaitNode node;
  // Uninterruptible and untimed: only finish() ends it.
  detail::wait_in(waiters_, node, lock_, kNoDeadline, detail::ParkKind::kUninterruptible, "once");
  // Done, or still kRunning: a failed run was handed to this caller.
  return state_.load(std::memory_order_acquire) != State::kDone;
}

void Once::finish(bool ran) noexcept {
  LockGuard guard(lock_);
  if (ran) {
    state_.store(State::kDone, std::memory_order_release);
    waiters_.notify_all();
    return;
  }
  // Hand-over: the state stays kRunning, now for the woken waiter.
  if (!waiters_.notify_one()) state_.store(State::kEmpty, std::memory_order_relaxed);
}

}  // namespace spindle
