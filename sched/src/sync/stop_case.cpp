// StopCase: a select case on the runtime's Stopper.

#include "core/stopper.hpp"
#include "spindle/base/assert.hpp"
#include "spindle/sched/select.hpp"

namespace spindle {

detail::Stopper& StopCase::stopper_of(StopSignal& s) noexcept {
  SPINDLE_ASSERT(s.stopper_ != nullptr, "a StopCase of a moved-from StopSignal");
  return *s.stopper_;
}

StopCase::StopCase(StopSignal& s) noexcept : StopCase(stopper_of(s)) {}

StopCase::StopCase(detail::Stopper& stopper) noexcept
    : SelectCase(&stopper.lock_), stopper_(stopper) {}

Result<int> StopCase::result() const {
  // Final once not open (acquire pairs with its store); code_ written before.
  if (stopper_.state_.load(std::memory_order_acquire) == detail::Stopper::State::kClosed) {
    return failure(errc::closed);
  }
  return stopper_.code_;
}

bool StopCase::try_fire() {
  return stopper_.state_.load(std::memory_order_relaxed) != detail::Stopper::State::kOpen;
}

void StopCase::enqueue(detail::WaitNode& node) SPINDLE_NO_THREAD_SAFETY_ANALYSIS {
  stopper_.signal_waiters_.push_back(&node);
}

void StopCase::dequeue(detail::WaitNode& node) SPINDLE_NO_THREAD_SAFETY_ANALYSIS {
  if (detail::WaitQueue::linked(&node)) stopper_.signal_waiters_.remove(&node);
}

}  // namespace spindle
