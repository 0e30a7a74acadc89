// Channel<T>: a typed queue between fibers and plain threads, bounded or
// unbuffered, with close.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <optional>
#include <utility>

#include "spindle/base/result.hpp"
#include "spindle/base/thread_annotations.hpp"
#include "spindle/sched/detail/spinlock.hpp"
#include "spindle/sched/detail/wait.hpp"

namespace spindle {

// Thread-safe; send and receive from any number of fibers and plain threads.
// capacity 0 is unbuffered: send() returns once a receiver has taken the
// value. After close(), send() fails with errc::closed and recv() drains what
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
  // Suspends: while the channel is full (unbuffered: until a receiver takes it).
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

  enum class Status : unsigned char { kWaiting, kDone, kClosed };
  // A waiter's side of a hand-over, on its stack, reached through WaitNode::data.
  struct Slot {
    std::optional<T> value;  // receiver: filled by the sender; sender: the value to take
    Status status = Status::kWaiting;
  };

  // Pops waiters from `q` until one accepts the claim; the hand-over `fill`
  // runs first and `undo` reverts it for a waiter that lost its claim (it is
  // blocked on lock_ to unlink, so its slot is still there).
  template <class Fill, class Undo>
  bool hand_over(detail::WaitQueue& q, Fill fill, Undo undo) SPINDLE_REQUIRES(lock_) {
    while (detail::WaitNode* n = q.pop_front()) {
      auto* slot = static_cast<Slot*>(n->data);
      fill(*slot);
      slot->status = Status::kDone;
      if (n->notify()) return true;
      slot->status = Status::kWaiting;
      undo(*slot);
    }
    return false;
  }
  // Tries to pass `value` to a waiting receiver; on success `value` is left
  // moved-from.
  bool give_to_receiver(T& value) SPINDLE_REQUIRES(lock_) {
    return hand_over(
        receivers_, [&](Slot& s) { s.value.emplace(std::move(value)); },
        [&](Slot& s) {
          value = std::move(*s.value);
          s.value.reset();
        });
  }
  // Moves a waiting sender's value to the buffer's tail.
  bool admit_sender() SPINDLE_REQUIRES(lock_) {
    return hand_over(
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
    hand_over(
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
  // Parks the caller in `q` with `slot` until a hand-over ({}), close
  // (errc::closed), the deadline (errc::timed_out) or abort (errc::aborted).
  // Returns with lock_ released.
  Result<void> park(detail::WaitQueue& q, Slot& slot, Deadline deadline, const char* what)
      SPINDLE_RELEASE(lock_) {
    detail::WaitNode node;
    node.data = &slot;
    switch (detail::wait_in(q, node, lock_, deadline, detail::ParkKind::kInterruptible, what)) {
      case detail::WakeReason::kNotified:
        if (slot.status == Status::kClosed) return failure(errc::closed);
        return {};
      case detail::WakeReason::kTimedOut:
      case detail::WakeReason::kScopeExpired:
        return failure(errc::timed_out);
      case detail::WakeReason::kAborted:
        break;
    }
    return failure(errc::aborted);
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
  return park(senders_, slot, deadline, "channel send");
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
  if (auto r = park(receivers_, slot, deadline, "channel recv"); !r) return failure(r.error());
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
    for (auto* q : {&receivers_, &senders_}) {
      while (detail::WaitNode* n = q->pop_front()) {
        static_cast<Slot*>(n->data)->status = Status::kClosed;
        n->notify();
      }
    }
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
