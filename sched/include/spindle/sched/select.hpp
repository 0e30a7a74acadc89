// select: wait on several cases at once (channel receive and send, an Event,
// a task's end, the runtime's stop signal, a deadline) and learn which fired.
//
//   spindle::RecvCase msg(inbox);
//   spindle::EventCase quit(shutdown);
//   switch (spindle::select(msg, quit, spindle::TimerCase::after(1s)).value()) {
//     case 0: handle(msg.result()); break;  // the value, or errc::closed
//     case 1: return;
//     case 2: flush(); break;
//   }
//
// One case fires per call: the value it takes or hands over moves, the other
// cases take nothing and leave no waiter behind. Among cases ready at once the
// choice is random, so none starves. A case object serves one select at a
// time and may be reused for the next; each holds its result until then.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <optional>
#include <type_traits>
#include <utility>

#include "spindle/base/assert.hpp"
#include "spindle/base/result.hpp"
#include "spindle/base/thread_annotations.hpp"
#include "spindle/base/time.hpp"
#include "spindle/sched/channel.hpp"
#include "spindle/sched/detail/select.hpp"
#include "spindle/sched/event.hpp"
#include "spindle/sched/join_handle.hpp"
#include "spindle/sched/stop.hpp"

namespace spindle {

// Fires when the channel has a value to receive (which it takes) or is
// closed and drained. Not thread-safe (as every case).
template <class T>
class RecvCase final : public detail::SelectCase {
 public:
  explicit RecvCase(Channel<T>& ch) noexcept : SelectCase(&ch.lock_), ch_(ch) {}

  // Once a select returned this case: the value (moved out), or errc::closed.
  Result<T> result() {
    if (!value_) return failure(errc::closed);
    Result<T> out(std::move(*value_));
    value_.reset();
    return out;
  }

  bool try_fire() override SPINDLE_NO_THREAD_SAFETY_ANALYSIS {
    value_ = ch_.take();
    return value_.has_value() || ch_.closed_;
  }
  void enqueue(detail::WaitNode& node) override SPINDLE_NO_THREAD_SAFETY_ANALYSIS {
    slot_ = {};
    node.data = &slot_;
    ch_.receivers_.push_back(&node);
  }
  void dequeue(detail::WaitNode& node) override SPINDLE_NO_THREAD_SAFETY_ANALYSIS {
    if (detail::WaitQueue::linked(&node)) ch_.receivers_.remove(&node);
  }
  void won() override { value_ = std::move(slot_.value); }  // empty if closed

 private:
  Channel<T>& ch_;
  typename Channel<T>::Slot slot_;
  std::optional<T> value_;
};

// Fires when the channel takes `value` (a receiver or buffer room), or is
// closed (the value is dropped). A case that does not fire keeps the value.
template <class T>
class SendCase final : public detail::SelectCase {
 public:
  SendCase(Channel<T>& ch, T value) : SelectCase(&ch.lock_), ch_(ch) {
    slot_.value.emplace(std::move(value));
  }

  // Once a select returned this case: sent, or errc::closed.
  Result<void> result() const {
    if (closed_) return failure(errc::closed);
    return {};
  }

  bool try_fire() override SPINDLE_NO_THREAD_SAFETY_ANALYSIS {
    if (ch_.closed_) {
      closed_ = true;
    } else if (!ch_.give_to_receiver(*slot_.value)) {
      if (ch_.buffer_.size() >= ch_.capacity_) return false;
      ch_.buffer_.push_back(std::move(*slot_.value));
    }
    slot_.value.reset();
    return true;
  }
  void enqueue(detail::WaitNode& node) override SPINDLE_NO_THREAD_SAFETY_ANALYSIS {
    slot_.status = Channel<T>::Slot::Status::kWaiting;
    node.data = &slot_;
    ch_.senders_.push_back(&node);
  }
  void dequeue(detail::WaitNode& node) override SPINDLE_NO_THREAD_SAFETY_ANALYSIS {
    if (detail::WaitQueue::linked(&node)) ch_.senders_.remove(&node);
  }
  void won() override {
    closed_ = slot_.status == Channel<T>::Slot::Status::kClosed;
    slot_.value.reset();
  }

 private:
  Channel<T>& ch_;
  typename Channel<T>::Slot slot_;
  bool closed_ = false;
};

template <class T>
SendCase(Channel<T>&, T) -> SendCase<T>;

// Fires while the event is set.
class EventCase final : public detail::SelectCase {
 public:
  explicit EventCase(Event& e) noexcept : SelectCase(&e.lock_), event_(e) {}

  bool try_fire() override { return event_.set_.load(std::memory_order_relaxed); }
  void enqueue(detail::WaitNode& node) override SPINDLE_NO_THREAD_SAFETY_ANALYSIS {
    event_.waiters_.push_back(&node);
  }
  void dequeue(detail::WaitNode& node) override SPINDLE_NO_THREAD_SAFETY_ANALYSIS {
    if (detail::WaitQueue::linked(&node)) event_.waiters_.remove(&node);
  }

 private:
  Event& event_;
};

// Fires once the handle's task has ended; join() then returns at once. The
// handle must be valid.
class JoinCase final : public detail::SelectCase {
 public:
  template <class T>
  explicit JoinCase(JoinHandle<T>& h) noexcept : JoinCase(task_of(h)) {}

  bool try_fire() override { return task_.done(); }
  void enqueue(detail::WaitNode& node) override SPINDLE_NO_THREAD_SAFETY_ANALYSIS {
    task_.joiners_.push_back(&node);
  }
  void dequeue(detail::WaitNode& node) override SPINDLE_NO_THREAD_SAFETY_ANALYSIS {
    if (detail::WaitQueue::linked(&node)) task_.joiners_.remove(&node);
  }

 private:
  explicit JoinCase(detail::Task& task) noexcept : SelectCase(&task.lock()), task_(task) {}
  template <class T>
  static detail::Task& task_of(JoinHandle<T>& h) noexcept {
    SPINDLE_ASSERT(h.task_ != nullptr, "a JoinCase of an empty JoinHandle");
    return *h.task_;
  }

  detail::Task& task_;
};

// Fires once the runtime is stopped (or ended without a stop). The signal
// must not be moved from.
class StopCase final : public detail::SelectCase {
 public:
  explicit StopCase(StopSignal& s) noexcept;

  // Once a select returned this case: the stop code, or errc::closed if the
  // runtime ended without a stop.
  Result<int> result() const;

  bool try_fire() override;
  void enqueue(detail::WaitNode& node) override;
  void dequeue(detail::WaitNode& node) override;

 private:
  explicit StopCase(detail::Stopper& stopper) noexcept;
  static detail::Stopper& stopper_of(StopSignal& s) noexcept;

  detail::Stopper& stopper_;
};

// Fires at its deadline.
class TimerCase final : public detail::SelectCase {
 public:
  explicit TimerCase(Deadline deadline) noexcept : SelectCase(nullptr, deadline) {}
  // `timeout` from now; clamps to the far future.
  static TimerCase after(std::chrono::nanoseconds timeout) noexcept {
    return TimerCase(deadline_after(timeout));
  }

  bool try_fire() override { return Clock::now() >= deadline(); }
  // A timer has no queue: the select's park carries its deadline.
  void enqueue(detail::WaitNode&) override {}
  void dequeue(detail::WaitNode&) override {}
};

namespace detail {
template <class... Cases>
constexpr bool kSelectCases = sizeof...(Cases) >= 1 && sizeof...(Cases) <= kMaxSelectCases &&
                              (std::is_base_of_v<SelectCase, std::remove_cvref_t<Cases>> && ...);
}  // namespace detail

// Fires one case and returns its index among the arguments: one ready now,
// chosen at random, else the first to become ready. errc::aborted if the
// calling fiber is aborted (checked first). From fibers and plain threads.
// Suspends: until a case fires or abort.
template <class... Cases>
  requires detail::kSelectCases<Cases...>
Result<std::size_t> select(Cases&&... cases) {
  detail::SelectCase* const list[] = {&cases...};
  auto r = detail::select_cases(list, true);
  if (!r) return failure(r.error());
  return **r;
}

// Fires one case that is ready now, chosen at random, and returns its index;
// std::nullopt if none is (Go's `default`). Never suspends.
template <class... Cases>
  requires detail::kSelectCases<Cases...>
std::optional<std::size_t> try_select(Cases&&... cases) {
  detail::SelectCase* const list[] = {&cases...};
  return *detail::select_cases(list, false);
}

}  // namespace spindle
