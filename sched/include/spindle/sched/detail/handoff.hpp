// Hand-over: how every channel kind passes a value to a parked waiter together
// with the claim on its wait, and how its receivers wait for one.
#pragma once

#include <optional>
#include <utility>

#include "spindle/base/result.hpp"
#include "spindle/base/thread_annotations.hpp"
#include "spindle/base/time.hpp"
#include "spindle/sched/detail/spinlock.hpp"
#include "spindle/sched/detail/wait.hpp"

namespace spindle::detail {

// A waiter's side of a hand-over, on its stack, reached through WaitNode::data.
// Not thread-safe: written by a notifier under the primitive's lock, read by
// the waiter once its wait has ended.
template <class T>
struct HandOff {
  enum class Status : unsigned char { kWaiting, kDone, kClosed };
  std::optional<T> value;  // receiver: filled by the sender; sender: the value to take
  Status status = Status::kWaiting;
};

// Pops waiters from `q` until one accepts the claim and returns true; false
// with `q` empty. `fill(HandOff<T>&)` runs first and `undo(HandOff<T>&)`
// reverts it for a waiter that lost its claim to a deadline or abort (that
// waiter is blocked on the lock to unlink, so its slot is still there): a
// waiter that loses has been given nothing. The caller holds the lock of `q`;
// `fill` and `undo` may be annotated SPINDLE_REQUIRES of it.
template <class T, class Fill, class Undo>
bool hand_over(WaitQueue& q, Fill&& fill, Undo&& undo) SPINDLE_NO_THREAD_SAFETY_ANALYSIS {
  while (WaitNode* n = q.pop_front()) {
    auto* slot = static_cast<HandOff<T>*>(n->data);
    fill(*slot);
    slot->status = HandOff<T>::Status::kDone;
    if (n->notify()) return true;
    slot->status = HandOff<T>::Status::kWaiting;
    undo(*slot);
  }
  return false;
}

// Hands a copy of `value` to every waiter in `q` that accepts its claim. The
// caller holds the lock of `q`.
template <class T>
void hand_copies(WaitQueue& q, const T& value) {
  while (hand_over<T>(
      q, [&](HandOff<T>& s) { s.value.emplace(value); }, [](HandOff<T>& s) { s.value.reset(); })) {
  }
}

// Wakes every waiter in `q` with errc::closed. The caller holds the lock of `q`.
template <class T>
void close_waiters(WaitQueue& q) noexcept {
  while (WaitNode* n = q.pop_front()) {
    static_cast<HandOff<T>*>(n->data)->status = HandOff<T>::Status::kClosed;
    n->notify();
  }
}

// Parks the caller in `q` with `slot` until a hand-over ({}), close
// (errc::closed), the deadline (errc::timed_out) or abort (errc::aborted).
// Returns with `lock` released and the caller unlinked from `q`.
// Suspends: until one of those.
template <class T>
Result<void> park(WaitQueue& q, HandOff<T>& slot, SpinLock& lock, Deadline deadline,
                  const char* what) SPINDLE_RELEASE(lock) {
  WaitNode node;
  node.data = &slot;
  switch (wait_in(q, node, lock, deadline, ParkKind::kInterruptible, what)) {
    case WakeReason::kNotified:
      if (slot.status == HandOff<T>::Status::kClosed) return failure(errc::closed);
      return {};
    case WakeReason::kTimedOut:
    case WakeReason::kScopeExpired:
      return failure(errc::timed_out);
    case WakeReason::kAborted:
      break;
  }
  return failure(errc::aborted);
}

// What a receiver's hook does after a hand-over by default: nothing.
struct NoHook {
  void operator()() const noexcept {}
};

// The blocking receive of oneshot, broadcast and watch. Checks abort first
// (errc::aborted). Then, under `lock`, `take()` (annotated SPINDLE_REQUIRES
// of the lock) returns what a receive ends with now (a value or an error), or
// nullopt to wait in `q` for a hand-over; after one, the receiver runs
// `handed()` (without the lock) to note that it took the value. Returns with
// `lock` released.
// Suspends: unless take() has an answer.
template <class T, class Take, class Handed = NoHook>
Result<T> receive_until(WaitQueue& q, SpinLock& lock, Deadline deadline, const char* what,
                        Take take, Handed handed = {}) SPINDLE_NO_THREAD_SAFETY_ANALYSIS {
  if (current_aborted()) return failure(errc::aborted);
  lock.lock();
  if (std::optional<Result<T>> now = take()) {
    lock.unlock();
    return std::move(*now);
  }
  HandOff<T> slot;
  if (auto r = park(q, slot, lock, deadline, what); !r) return failure(r.error());
  handed();
  return std::move(*slot.value);
}

}  // namespace spindle::detail
