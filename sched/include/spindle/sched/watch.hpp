// watch<T>(initial): the latest value, and a wait for a newer one.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>

#include "spindle/base/lock_guard.hpp"
#include "spindle/base/result.hpp"
#include "spindle/base/thread_annotations.hpp"
#include "spindle/sched/detail/channel_end.hpp"
#include "spindle/sched/detail/handoff.hpp"
#include "spindle/sched/detail/spinlock.hpp"
#include "spindle/sched/detail/wait.hpp"

namespace spindle {

template <class T>
class WatchSender;
template <class T>
class WatchReceiver;

// A new watch channel holding `initial`, and its first receiver, which has
// seen `initial`: `auto [tx, rx] = watch<Config>(cfg);`. T must be copyable:
// each receiver gets a copy.
template <class T>
std::pair<WatchSender<T>, WatchReceiver<T>> watch(T initial);

namespace detail {

// What a watch's ends share. Every send makes a new version.
//
// Invariant (under lock): `value` is version `version`; a receiver waits only
// when it has seen `version`; once `closed` the value no longer changes.
template <class T>
struct WatchState {
  using Value = T;
  explicit WatchState(T initial) : value(std::move(initial)) {}

  SpinLock lock;
  T value SPINDLE_GUARDED_BY(lock);
  std::uint64_t version SPINDLE_GUARDED_BY(lock) = 0;
  bool closed SPINDLE_GUARDED_BY(lock) = false;
  WaitQueue receivers SPINDLE_GUARDED_BY(lock);
};

}  // namespace detail

// The sending end: move-only; thread-safe (share it by reference among
// senders). Dropping it closes the channel. Nothing here suspends.
template <class T>
class WatchSender {
 public:
  // Replaces the value with a new version and hands a copy to each parked
  // receiver; errc::closed after close().
  Result<void> send(T value);
  // A receiver that has seen the current value.
  WatchReceiver<T> subscribe() const;
  // changed() fails with errc::closed once a receiver has seen the last
  // value; get() still returns it. Idempotent.
  void close() noexcept { detail::close_channel(*state_); }

 private:
  friend std::pair<WatchSender<T>, WatchReceiver<T>> watch<T>(T);
  explicit WatchSender(std::shared_ptr<detail::WatchState<T>> s) : state_(std::move(s)) {}

  detail::ChannelEnd<detail::WatchState<T>, detail::CloseOnDrop> state_;
};

// A receiving end, which remembers the version it saw last. Copyable: a copy
// has seen what this one has, and goes on independently. One fiber or thread
// at a time per object; receivers are independent of each other. get() and
// try_changed() never suspend.
template <class T>
class WatchReceiver {
 public:
  // The latest value; this receiver has then seen it.
  T get();
  // The latest value once it is newer than the one this receiver saw last
  // (versions in between are skipped); this receiver has then seen it.
  // errc::closed once closed and the latest seen, errc::aborted, or with a
  // deadline errc::timed_out.
  // Suspends: while this receiver has seen the latest value.
  Result<T> changed() { return changed_until(kNoDeadline); }
  Result<T> changed_until(Deadline deadline);
  Result<T> changed_for(std::chrono::nanoseconds timeout) {
    return changed_until(Clock::now() + timeout);
  }
  // Never blocks; nullopt unless there is a value this receiver has not seen.
  std::optional<T> try_changed();

 private:
  friend class WatchSender<T>;
  friend std::pair<WatchSender<T>, WatchReceiver<T>> watch<T>(T);
  using State = detail::WatchState<T>;
  WatchReceiver(std::shared_ptr<State> s, std::uint64_t seen) : state_(std::move(s)), seen_(seen) {}
  // The latest value if this receiver has not seen it (then it has).
  std::optional<T> take_unseen(State& s) SPINDLE_REQUIRES(s.lock);

  std::shared_ptr<State> state_;
  std::uint64_t seen_;  // the version this receiver saw last
};

template <class T>
std::pair<WatchSender<T>, WatchReceiver<T>> watch(T initial) {
  auto state = std::make_shared<detail::WatchState<T>>(std::move(initial));
  return {WatchSender<T>(state), WatchReceiver<T>(state, 0)};
}

template <class T>
Result<void> WatchSender<T>::send(T value) {
  detail::WatchState<T>& s = *state_;
  LockGuard guard(s.lock);
  if (s.closed) return failure(errc::closed);
  s.value = std::move(value);
  ++s.version;
  // Parked receivers had seen the version before: this one is their next.
  detail::hand_copies(s.receivers, s.value);
  return {};
}

template <class T>
WatchReceiver<T> WatchSender<T>::subscribe() const {
  detail::WatchState<T>& s = *state_;
  LockGuard guard(s.lock);
  return WatchReceiver<T>(state_.shared(), s.version);
}

template <class T>
T WatchReceiver<T>::get() {
  State& s = *state_;
  LockGuard guard(s.lock);
  seen_ = s.version;
  return s.value;
}

template <class T>
std::optional<T> WatchReceiver<T>::take_unseen(State& s) {
  if (seen_ == s.version) return std::nullopt;
  seen_ = s.version;
  return s.value;
}

template <class T>
Result<T> WatchReceiver<T>::changed_until(Deadline deadline) {
  State& s = *state_;
  return detail::receive_until<T>(
      s.receivers, s.lock, deadline, "watch changed",
      [&]() SPINDLE_REQUIRES(s.lock) -> std::optional<Result<T>> {
        if (std::optional<T> v = take_unseen(s)) return Result<T>(std::move(*v));
        if (s.closed) return Result<T>(failure(errc::closed));
        return std::nullopt;
      },
      [this] { ++seen_; });
}

template <class T>
std::optional<T> WatchReceiver<T>::try_changed() {
  State& s = *state_;
  LockGuard guard(s.lock);
  return take_unseen(s);
}

}  // namespace spindle
