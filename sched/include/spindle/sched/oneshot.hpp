// oneshot<T>(): one value, sent once, between fibers and plain threads.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <utility>

#include "spindle/base/assert.hpp"
#include "spindle/base/lock_guard.hpp"
#include "spindle/base/result.hpp"
#include "spindle/base/thread_annotations.hpp"
#include "spindle/sched/detail/channel_end.hpp"
#include "spindle/sched/detail/handoff.hpp"
#include "spindle/sched/detail/spinlock.hpp"
#include "spindle/sched/detail/wait.hpp"

namespace spindle {

template <class T>
class OneshotSender;
template <class T>
class OneshotReceiver;

// A new oneshot channel's two ends: `auto [tx, rx] = oneshot<int>();`.
template <class T>
std::pair<OneshotSender<T>, OneshotReceiver<T>> oneshot();

namespace detail {

// What the two ends of a oneshot share.
//
// Invariant (under lock): nobody waits in `receivers` once `closed` (a sent
// value goes straight to a parked receiver, or stays in `value` for the next
// receive; any other receive is told closed).
template <class T>
struct OneshotState {
  using Value = T;
  SpinLock lock;
  std::optional<T> value SPINDLE_GUARDED_BY(lock);  // sent, not yet received
  bool closed SPINDLE_GUARDED_BY(lock) = false;     // the sender sent or is gone
  bool receiver_gone SPINDLE_GUARDED_BY(lock) = false;
  WaitQueue receivers SPINDLE_GUARDED_BY(lock);
};

// The OnDrop of a oneshot's receiver: a later send hands its value back.
struct MarkReceiverGone {
  template <class T>
  void operator()(OneshotState<T>& s) const noexcept {
    LockGuard guard(s.lock);
    s.receiver_gone = true;
  }
};

}  // namespace detail

// The sending end: move-only, one send. Dropping it without sending ends the
// receiver's wait with errc::closed. Not thread-safe (one send); send() never
// suspends.
template <class T>
class OneshotSender {
 public:
  // Delivers `value` (to the parked receiver, or for its next receive) and
  // returns nullopt; hands `value` back if the receiver is gone. Call it
  // once: the sender is spent afterwards, as if dropped.
  std::optional<T> send(T value);

 private:
  friend std::pair<OneshotSender<T>, OneshotReceiver<T>> oneshot<T>();
  explicit OneshotSender(std::shared_ptr<detail::OneshotState<T>> s) : state_(std::move(s)) {}

  detail::ChannelEnd<detail::OneshotState<T>, detail::CloseOnDrop> state_;
};

// The receiving end: move-only, thread-safe (of receives at once one gets the
// value, the others errc::closed). Dropping it makes a later send() hand its
// value back. try_recv never suspends.
template <class T>
class OneshotReceiver {
 public:
  // The value; errc::closed if the sender was dropped without sending (or the
  // value was already received), errc::aborted, or with a deadline
  // errc::timed_out.
  // Suspends: until the value is sent or the sender is dropped.
  Result<T> recv() { return recv_until(kNoDeadline); }
  Result<T> recv_until(Deadline deadline);
  Result<T> recv_for(std::chrono::nanoseconds timeout) {
    return recv_until(Clock::now() + timeout);
  }
  // Never blocks; nullopt if the value is not there.
  std::optional<T> try_recv();

 private:
  friend std::pair<OneshotSender<T>, OneshotReceiver<T>> oneshot<T>();
  explicit OneshotReceiver(std::shared_ptr<detail::OneshotState<T>> s) : state_(std::move(s)) {}

  detail::ChannelEnd<detail::OneshotState<T>, detail::MarkReceiverGone> state_;
};

template <class T>
std::pair<OneshotSender<T>, OneshotReceiver<T>> oneshot() {
  auto state = std::make_shared<detail::OneshotState<T>>();
  return {OneshotSender<T>(state), OneshotReceiver<T>(state)};
}

template <class T>
std::optional<T> OneshotSender<T>::send(T value) {
  SPINDLE_ASSERT(state_, "oneshot: send on a spent or moved-from sender");
  const std::shared_ptr<detail::OneshotState<T>> state = state_.release();
  detail::OneshotState<T>& s = *state;
  LockGuard guard(s.lock);
  if (s.receiver_gone) return std::optional<T>(std::move(value));
  s.closed = true;
  const bool handed = detail::hand_over<T>(
      s.receivers, [&](detail::HandOff<T>& h) { h.value.emplace(std::move(value)); },
      [&](detail::HandOff<T>& h) {
        value = std::move(*h.value);
        h.value.reset();
      });
  if (!handed) s.value.emplace(std::move(value));
  detail::close_waiters<T>(s.receivers);
  return std::nullopt;
}

template <class T>
Result<T> OneshotReceiver<T>::recv_until(Deadline deadline) {
  detail::OneshotState<T>& s = *state_;
  return detail::receive_until<T>(s.receivers, s.lock, deadline, "oneshot recv",
                                  [&s]() SPINDLE_REQUIRES(s.lock) -> std::optional<Result<T>> {
                                    if (s.value)
                                      return Result<T>(*std::exchange(s.value, std::nullopt));
                                    if (s.closed) return Result<T>(failure(errc::closed));
                                    return std::nullopt;
                                  });
}

template <class T>
std::optional<T> OneshotReceiver<T>::try_recv() {
  LockGuard guard(state_->lock);
  return std::exchange(state_->value, std::nullopt);
}

}  // namespace spindle
