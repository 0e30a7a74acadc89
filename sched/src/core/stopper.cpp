// The runtime-wide stop request: Stopper, StopSignal, Context::stop/stopped.
//
// Protocol. One SpinLock guards the state, the count of holding signals and
// two wait queues. stopped() while open counts a hold and returns a holding
// signal; a copy of a holding signal counts one more (even after the stop, as
// the reference's Signal clones do); destroying or moving from one releases
// it. stop() moves open -> stopped once, notifies the signal waiters, and
// parks in the stop queue until the count is zero; the release that takes it
// to zero after the stop notifies that queue. Everything is notified under
// the lock, and waits end in wait_in, which returns only once it is free: a
// Stopper may go as soon as the last wait returns (it lives in a shared_ptr
// anyway).
//
// Rejected: an atomic hold count without the lock (a copy is rare, and the
// release to zero must notify under the lock anyway); an Event for the
// signal side (it would need a second lock for the count, and could not tell
// stopped from closed); keeping the whole Scheduler alive from a signal (its
// stacks and rings could outlive Runtime::run by as long as a signal lives).
#include "core/stopper.hpp"

#include <utility>

#include "spindle/base/assert.hpp"
#include "spindle/sched/context.hpp"

namespace spindle {
namespace detail {

StopSignal Stopper::signal() {
  lock_.lock();
  const bool open = state_.load(std::memory_order_relaxed) == State::kOpen;
  if (open) ++holders_;
  lock_.unlock();
  return StopSignal(shared_from_this(), open);
}

Result<void> Stopper::stop(int code, Deadline deadline) {
  if (current_aborted()) return failure(errc::aborted);
  lock_.lock();
  switch (state_.load(std::memory_order_relaxed)) {
    case State::kOpen:
      code_ = code;
      state_.store(State::kStopped, std::memory_order_release);
      signal_waiters_.notify_all();
      break;
    case State::kStopped:
      break;  // the first code wins; wait like the first caller
    case State::kClosed:
      lock_.unlock();
      return failure(errc::closed);
  }
  if (holders_ == 0) {
    lock_.unlock();
    return {};
  }
  WaitNode node;
  switch (wait_in(stop_waiters_, node, lock_, deadline, ParkKind::kInterruptible, "stop")) {
    case WakeReason::kNotified:
      return {};
    case WakeReason::kTimedOut:
    case WakeReason::kScopeExpired:
      return failure(errc::timed_out);
    case WakeReason::kAborted:
      return failure(errc::aborted);
  }
  return {};
}

void Stopper::close() noexcept {
  lock_.lock();
  if (state_.load(std::memory_order_relaxed) == State::kOpen) {
    state_.store(State::kClosed, std::memory_order_release);
    signal_waiters_.notify_all();
  }
  lock_.unlock();
}

void Stopper::add_hold() noexcept {
  lock_.lock();
  ++holders_;
  lock_.unlock();
}

void Stopper::release_hold() noexcept {
  lock_.lock();
  SPINDLE_ASSERT(holders_ > 0, "StopSignal released more holds than it took");
  if (--holders_ == 0 && state_.load(std::memory_order_relaxed) == State::kStopped) {
    stop_waiters_.notify_all();
  }
  lock_.unlock();
}

std::optional<int> Stopper::value() const noexcept {
  if (state_.load(std::memory_order_acquire) != State::kStopped) return std::nullopt;
  return code_;  // written before the release store of kStopped, never again
}

Result<int> Stopper::wait(Deadline deadline) {
  auto ended = wait_unless(signal_waiters_, lock_, deadline, "stop signal",
                           [this]() SPINDLE_REQUIRES(lock_) {
                             return state_.load(std::memory_order_relaxed) != State::kOpen;
                           });
  if (!ended) return failure(ended.error());
  if (!*ended) return failure(errc::timed_out);
  // Final once not open: read without the lock (acquire pairs with its store).
  if (state_.load(std::memory_order_acquire) == State::kClosed) return failure(errc::closed);
  return code_;
}

namespace {

Deadline deadline_after(std::optional<std::chrono::nanoseconds> timeout) noexcept {
  return timeout ? spindle::deadline_after(*timeout) : kNoDeadline;
}

}  // namespace
}  // namespace detail

// StopSignal -----------------------------------------------------------------

StopSignal::StopSignal(const StopSignal& o) : stopper_(o.stopper_), holds_(o.holds_) {
  if (holds_) stopper_->add_hold();
}

StopSignal& StopSignal::operator=(const StopSignal& o) {
  if (this != &o) *this = StopSignal(o);
  return *this;
}

StopSignal& StopSignal::operator=(StopSignal&& o) noexcept {
  if (this != &o) {
    release();
    stopper_ = std::move(o.stopper_);
    holds_ = std::exchange(o.holds_, false);
  }
  return *this;
}

StopSignal::~StopSignal() { release(); }

void StopSignal::release() noexcept {
  if (holds_) {
    holds_ = false;
    stopper_->release_hold();
  }
}

std::optional<int> StopSignal::value() const noexcept {
  return stopper_ ? stopper_->value() : std::nullopt;
}

Result<int> StopSignal::wait_until(Deadline deadline) {
  SPINDLE_ASSERT(stopper_ != nullptr, "StopSignal::wait() on a moved-from signal");
  return stopper_->wait(deadline);
}

// Context --------------------------------------------------------------------

Result<void> Context::stop(int code, std::optional<std::chrono::nanoseconds> timeout) const {
  return detail::stopper(*scheduler_).stop(code, detail::deadline_after(timeout));
}

StopSignal Context::stopped() const { return detail::stopper(*scheduler_).signal(); }

}  // namespace spindle
