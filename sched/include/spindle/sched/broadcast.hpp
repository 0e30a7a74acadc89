// broadcast<T>(capacity): every receiver sees every value sent after it
// subscribed, from a ring of the last `capacity` values.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
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
class BroadcastSender;
template <class T>
class BroadcastReceiver;

// A new broadcast channel holding up to `capacity` (at least 1) values, and
// its first receiver: `auto [tx, rx] = broadcast<Event>(64);`. T must be
// copyable: each receiver gets a copy.
template <class T>
std::pair<BroadcastSender<T>, BroadcastReceiver<T>> broadcast(std::size_t capacity);

namespace detail {

// What a broadcast's ends share. Values are numbered in the order sent.
//
// Invariant (under lock): `held` holds the values numbered `first` to
// next() - 1, at most `capacity` of them; a receiver waits only when it has
// read all of them (its cursor is next()); once `closed` no value is added.
template <class T>
struct BroadcastState {
  using Value = T;
  explicit BroadcastState(std::size_t cap) : capacity(cap) {}
  std::uint64_t next() const SPINDLE_REQUIRES(lock) { return first + held.size(); }

  const std::size_t capacity;
  SpinLock lock;
  std::deque<T> held SPINDLE_GUARDED_BY(lock);
  std::uint64_t first SPINDLE_GUARDED_BY(lock) = 0;  // the number of held.front()
  bool closed SPINDLE_GUARDED_BY(lock) = false;
  WaitQueue receivers SPINDLE_GUARDED_BY(lock);
};

}  // namespace detail

// The sending end: move-only; thread-safe (share it by reference among
// senders). Dropping it closes the channel. Nothing here suspends: with the
// ring full a send drops the oldest value, which receivers that had not read
// it learn as errc::lagged.
template <class T>
class BroadcastSender {
 public:
  // Holds `value` for every receiver and hands a copy to each parked one;
  // errc::closed after close().
  Result<void> send(T value);
  // A receiver that sees every value sent from now on.
  BroadcastReceiver<T> subscribe() const;
  // Receivers read what is held, then get errc::closed; sends fail. Idempotent.
  void close() noexcept { detail::close_channel(*state_); }

 private:
  friend std::pair<BroadcastSender<T>, BroadcastReceiver<T>> broadcast<T>(std::size_t);
  explicit BroadcastSender(std::shared_ptr<detail::BroadcastState<T>> s) : state_(std::move(s)) {}

  detail::ChannelEnd<detail::BroadcastState<T>, detail::CloseOnDrop> state_;
};

// A receiving end with its own place in the stream. Copyable: a copy reads on
// from the same place, independently. One fiber or thread at a time per
// object; receivers are independent of each other. try_recv and missed never
// suspend.
template <class T>
class BroadcastReceiver {
 public:
  // The next value this receiver has not read; errc::lagged if values it had
  // not read were dropped (missed() says how many; the next receive returns
  // the oldest value still held), errc::closed once closed and read to the
  // end, errc::aborted, or with a deadline errc::timed_out.
  // Suspends: while this receiver has read every value sent.
  Result<T> recv() { return recv_until(kNoDeadline); }
  Result<T> recv_until(Deadline deadline);
  Result<T> recv_for(std::chrono::nanoseconds timeout) {
    return recv_until(Clock::now() + timeout);
  }
  // What recv() would return, or nullopt where it would wait.
  std::optional<Result<T>> try_recv();
  // How many values the latest errc::lagged skipped.
  std::uint64_t missed() const noexcept { return missed_; }

 private:
  friend class BroadcastSender<T>;
  friend std::pair<BroadcastSender<T>, BroadcastReceiver<T>> broadcast<T>(std::size_t);
  using State = detail::BroadcastState<T>;
  BroadcastReceiver(std::shared_ptr<State> s, std::uint64_t cursor)
      : state_(std::move(s)), cursor_(cursor) {}
  // What a receive ends with now, or nullopt to wait.
  std::optional<Result<T>> take(State& s) SPINDLE_REQUIRES(s.lock);

  std::shared_ptr<State> state_;
  std::uint64_t cursor_;  // the number of the next value to read
  std::uint64_t missed_ = 0;
};

template <class T>
std::pair<BroadcastSender<T>, BroadcastReceiver<T>> broadcast(std::size_t capacity) {
  SPINDLE_ASSERT(capacity > 0, "broadcast: capacity must be at least 1");
  auto state = std::make_shared<detail::BroadcastState<T>>(capacity);
  return {BroadcastSender<T>(state), BroadcastReceiver<T>(state, 0)};
}

template <class T>
Result<void> BroadcastSender<T>::send(T value) {
  detail::BroadcastState<T>& s = *state_;
  LockGuard guard(s.lock);
  if (s.closed) return failure(errc::closed);
  if (s.held.size() == s.capacity) {
    s.held.pop_front();
    ++s.first;
  }
  s.held.push_back(std::move(value));
  // Parked receivers had read everything: the new value is their next.
  detail::hand_copies(s.receivers, s.held.back());
  return {};
}

template <class T>
BroadcastReceiver<T> BroadcastSender<T>::subscribe() const {
  detail::BroadcastState<T>& s = *state_;
  LockGuard guard(s.lock);
  return BroadcastReceiver<T>(state_.shared(), s.next());
}

template <class T>
std::optional<Result<T>> BroadcastReceiver<T>::take(State& s) {
  if (cursor_ < s.first) {
    missed_ = s.first - cursor_;
    cursor_ = s.first;
    return Result<T>(failure(errc::lagged));
  }
  if (cursor_ < s.next()) return Result<T>(s.held[cursor_++ - s.first]);
  if (s.closed) return Result<T>(failure(errc::closed));
  return std::nullopt;
}

template <class T>
Result<T> BroadcastReceiver<T>::recv_until(Deadline deadline) {
  State& s = *state_;
  return detail::receive_until<T>(
      s.receivers, s.lock, deadline, "broadcast recv",
      [&]() SPINDLE_REQUIRES(s.lock) { return take(s); }, [this] { ++cursor_; });
}

template <class T>
std::optional<Result<T>> BroadcastReceiver<T>::try_recv() {
  State& s = *state_;
  LockGuard guard(s.lock);
  return take(s);
}

}  // namespace spindle
