// Channel<T>: a typed queue between fibers and plain threads, bounded,
// unbuffered or unbounded, with close.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <limits>
#include <optional>
#include <utility>

#include "spindle/base/result.hpp"
#include "spindle/base/thread_annotations.hpp"
#include "spindle/sched/detail/handoff.hpp"
#include "spindle/sched/detail/spinlock.hpp"
#include "spindle/sched/detail/wait.hpp"

namespace spindle {

// The capacity of an unbounded Channel: send() never waits for room (memory
// is the limit). Unbounded is a capacity rather than a class of its own
// because nothing else differs: the queue, close, the FIFO order and the
// hand-over to a parked receiver are Channel's, only "full" never holds, and
// a separate class would repeat or wrap all of that.
inline constexpr std::size_t kUnbounded = std::numeric_limits<std::size_t>::max();

// Thread-safe; send and receive from any number of fibers and plain threads.
// capacity 0 is unbuffered: send() returns once a receiver has taken the
// value; kUnbounded: send() never suspends and try_send() fails only once
// closed. After close(), send() fails with errc::closed and recv() drains what
// is buffered, then fails with errc::closed. FIFO among senders and among
// receivers. Where a fiber parks, a plain thread blocks on a futex; try_send,
// try_recv, close, closed, size and capacity never suspend.
//
// Invariant (under lock_): receivers wait only while the buffer is empty;
// senders wait only while the buffer is full; never both at once.
template <class T>
class Channel {
 public:
  explicit Channel(std::size_t capacity = 0) : capacity_(capacity) {}
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  // errc::closed (the value is dropped), errc::aborted, or with a deadline
  // errc::timed_out.
  // Suspends: while the channel is full (unbuffered: until a receiver takes
  // it; kUnbounded: never).
  Result<void> send(T value) { return send_until(std::move(value), kNoDeadline); }
  Result<void> send_until(T value, Deadline deadline);
  Result<void> send_for(T value, std::chrono::nanoseconds timeout) {
    return send_until(std::move(value), Clock::now() + timeout);
  }
  // Never blocks. Hands `value` back if it could not be sent (full, or
  // unbuffered with no receiver waiting, or closed).
  std::optional<T> try_send(T value);

  // errc::closed once closed and drained, errc::aborted, errc::timed_out.
  // Suspends: while the channel is empty.
  Result<T> recv() { return recv_until(kNoDeadline); }
  Result<T> recv_until(Deadline deadline);
  Result<T> recv_for(std::chrono::nanoseconds timeout) {
    return recv_until(Clock::now() + timeout);
  }
  // Never blocks; nullopt if nothing is ready.
  std::optional<T> try_recv();

  // Wakes every waiter: receivers get errc::closed (nothing was buffered, or
  // they would not wait), senders get errc::closed. Idempotent.
  void close() noexcept;
  bool closed() const noexcept;
  std::size_t size() const noexcept;  // buffered values
  std::size_t capacity() const noexcept { return capacity_; }

 private:
  template <class>
  friend class RecvCase;
  template <class>
  friend class SendCase;

  using Slot = detail::HandOff<T>;

  // Tries to pass `value` to a waiting receiver; on success `value` is left
  // moved-from.
  bool give_to_receiver(T& value) SPINDLE_REQUIRES(lock_) {
    return detail::hand_over<T>(
        receivers_, [&](Slot& s) { s.value.emplace(std::move(value)); },
        [&](Slot& s) {
          value = std::move(*s.value);
          s.value.reset();
        });
  }
  // Moves a waiting sender's value to the buffer's tail.
  bool admit_sender() SPINDLE_REQUIRES(lock_) {
    return detail::hand_over<T>(
        senders_,
        [&](Slot& s) SPINDLE_REQUIRES(lock_) {
          buffer_.push_back(std::move(*s.value));
          s.value.reset();
        },
        [&](Slot& s) SPINDLE_REQUIRES(lock_) {
          s.value.emplace(std::move(buffer_.back()));
          buffer_.pop_back();
        });
  }
  // The oldest value, if there is one. It comes from the buffer, whose room a
  // waiting sender then fills; with the buffer empty (always, unbuffered) it
  // comes straight from a waiting sender's slot.
  std::optional<T> take() SPINDLE_REQUIRES(lock_) {
    std::optional<T> out;
    if (!buffer_.empty()) {
      out.emplace(std::move(buffer_.front()));
      buffer_.pop_front();
      admit_sender();
      return out;
    }
    detail::hand_over<T>(
        senders_,
        [&](Slot& s) {
          out.emplace(std::move(*s.value));
          s.value.reset();
        },
        [&](Slot& s) {
          s.value.emplace(std::move(*out));
          out.reset();
        });
    return out;
  }
  const std::size_t capacity_;
  mutable detail::SpinLock lock_;
  std::deque<T> buffer_ SPINDLE_GUARDED_BY(lock_);
  bool closed_ SPINDLE_GUARDED_BY(lock_) = false;
  detail::WaitQueue senders_ SPINDLE_GUARDED_BY(lock_);
  detail::WaitQueue receivers_ SPINDLE_GUARDED_BY(lock_);
};

template <class T>
Result<void> Channel<T>::send_until(T value, Deadline deadline) {
  if (detail::current_aborted()) return failure(errc::aborted);
  lock_.lock();
  if (closed_) {
    lock_.unlock();
    return failure(errc::closed);
  }
  if (give_to_receiver(value)) {
    lock_.unlock();
    return {};
  }
  if (buffer_.size() < capacity_) {
    buffer_.push_back(std::move(value));
    lock_.unlock();
    return {};
  }
  Slot slot;
  slot.value.emplace(std::move(value));
  return detail::park(senders_, slot, lock_, deadline, "channel send");
}

template <class T>
std::optional<T> Channel<T>::try_send(T value) {
  lock_.lock();
  const bool sent =
      !closed_ && (give_to_receiver(value) ||
                   (buffer_.size() < capacity_ && (buffer_.push_back(std::move(value)), true)));
  lock_.unlock();
  if (sent) return std::nullopt;
  return std::optional<T>(std::move(value));
}

template <class T>
Result<T> Channel<T>::recv_until(Deadline deadline) {
  if (detail::current_aborted()) return failure(errc::aborted);
  lock_.lock();
  if (std::optional<T> value = take()) {
    lock_.unlock();
    return Result<T>(std::move(*value));
  }
  if (closed_) {
    lock_.unlock();
    return failure(errc::closed);
  }
  Slot slot;
  if (auto r = detail::park(receivers_, slot, lock_, deadline, "channel recv"); !r) {
    return failure(r.error());
  }
  return std::move(*slot.value);
}

template <class T>
std::optional<T> Channel<T>::try_recv() {
  lock_.lock();
  std::optional<T> out = take();
  lock_.unlock();
  return out;
}

template <class T>
void Channel<T>::close() noexcept {
  lock_.lock();
  if (!closed_) {
    closed_ = true;
    detail::close_waiters<T>(receivers_);
    detail::close_waiters<T>(senders_);
  }
  lock_.unlock();
}

template <class T>
bool Channel<T>::closed() const noexcept {
  lock_.lock();
  const bool c = closed_;
  lock_.unlock();
  return c;
}

template <class T>
std::size_t Channel<T>::size() const noexcept {
  lock_.lock();
  const std::size_t n = buffer_.size();
  lock_.unlock();
  return n;
}

}  // namespace spindle
