#include "spindle/sched/detail/wait.hpp"

#include <cerrno>
#include <thread>

#include "core/park_word.hpp"
#include "core/worker.hpp"
#include "park/futex.hpp"
#include "spindle/sched/detail/core.hpp"

namespace spindle::detail {
namespace {

WakeReason thread_wait(WaitNode& node, SpinLock& lock, Deadline deadline) noexcept
    SPINDLE_RELEASE(lock) {
  lock.unlock();
  // thread_state: 1 + the WakeReason of the claim.
  const std::uint32_t state = wait_for_claim(node.thread_state, deadline,
                                             1 + static_cast<std::uint32_t>(WakeReason::kTimedOut));
  return static_cast<WakeReason>(state - 1);
}

// Suspend::publish for wait(): the worker runs it once the parked fiber's
// context is saved, on the thread the fiber locked on. The analysis cannot
// see that the lock is held here: wait() took it as the fiber's caller's and
// handed it over through a void* across the context switch.
void unlock_spinlock(void* lock) noexcept SPINDLE_NO_THREAD_SAFETY_ANALYSIS {
  static_cast<SpinLock*>(lock)->unlock();
}

}  // namespace

WaitNode::WaitNode() noexcept {
  if (Fiber* f = current_fiber()) {
    fiber = f;
    epoch = ++f->epoch;
  }
}

WaitNode::WaitNode(SelectClaim& c, std::uint32_t i) noexcept : claim(&c), index(i) {
  if (Fiber* f = current_fiber()) {
    fiber = f;
    epoch = f->epoch;
  }
}

bool WaitNode::notify(WakeReason reason) noexcept {
  if (claim) {
    std::uint32_t open = 0;
    // acq_rel: the winner's hand-over happens before the select reads it.
    if (!claim->word.compare_exchange_strong(open, index + 1, std::memory_order_acq_rel)) {
      return false;
    }
    // A fiber's park may have been claimed by its deadline or an abort first.
    if (fiber) return wake_fiber(fiber, epoch, reason);
    futex(&claim->word, FUTEX_WAKE, 1, nullptr);
    return true;
  }
  if (fiber) return wake_fiber(fiber, epoch, reason);
  std::uint32_t expected = 0;
  if (!thread_state.compare_exchange_strong(expected, 1 + static_cast<std::uint32_t>(reason),
                                            std::memory_order_acq_rel)) {
    return false;
  }
  futex(&thread_state, FUTEX_WAKE, 1, nullptr);
  return true;
}

WaitNode* WaitQueue::notify_one(WakeReason reason) noexcept {
  while (WaitNode* n = pop_front()) {
    if (n->notify(reason)) return n;
  }
  return nullptr;
}

std::size_t WaitQueue::notify_all(WakeReason reason) noexcept {
  std::size_t woken = 0;
  while (WaitNode* n = pop_front()) woken += n->notify(reason) ? 1 : 0;
  return woken;
}

WakeReason wait_in(WaitQueue& queue, WaitNode& node, SpinLock& lock, Deadline deadline,
                   ParkKind kind, const char* what) noexcept {
  queue.push_back(&node);
  const WakeReason reason = wait(node, lock, deadline, kind, what);
  // Notifiers hold the lock while they notify, and may still be walking the
  // queue when this waiter runs again. Seeing the lock free once more means
  // the notifier is done with the primitive, so the caller may destroy it as
  // soon as the wait returns (a WaitGroup or Event on the waiter's stack). A
  // notifier unlinks the node before it notifies, so after a notify that is
  // all there is to wait for: the notifier took the lock before the wake that
  // resumed this waiter, so a free lock seen now is its release or a later one.
  if (reason == WakeReason::kNotified) {
    lock.wait_unlocked();
    return reason;
  }
  lock.lock();
  if (WaitQueue::linked(&node)) queue.remove(&node);
  lock.unlock();
  return reason;
}

bool in_fiber() noexcept { return current_fiber() != nullptr; }

bool current_aborted() noexcept {
  Fiber* f = current_fiber();
  return f && f->aborted();
}

// Not analysed: on a fiber the lock is released not here but by
// unlock_spinlock(), which the worker runs after the fiber parks (so a notify
// cannot resume the fiber before its context is saved). Every path releases
// it exactly once: thread_wait() directly, the park through its publish step.
WakeReason wait(WaitNode& node, SpinLock& lock, Deadline deadline, ParkKind kind,
                const char* what) noexcept SPINDLE_NO_THREAD_SAFETY_ANALYSIS {
  if (node.fiber) return park_fiber(node, deadline, kind, what, &unlock_spinlock, &lock);
  bool from_scope = false;
  if (kind == ParkKind::kInterruptible) deadline = effective_deadline(deadline, from_scope);
  const WakeReason r = thread_wait(node, lock, deadline);
  return r == WakeReason::kTimedOut && from_scope ? WakeReason::kScopeExpired : r;
}

WakeReason park_fiber(WaitNode& node, Deadline deadline, ParkKind kind, const char* what,
                      void (*release)(void* arg) noexcept, void* arg) noexcept {
  Fiber* f = node.fiber;
  SPINDLE_DCHECK(f == current_fiber() && node.epoch == f->epoch);
  // The fiber's deadline scope (detail::scope_deadline()), read directly.
  const bool from_scope = kind == ParkKind::kInterruptible && f->scope_deadline < deadline;
  if (from_scope) deadline = f->scope_deadline;
  f->waiting_on = what;
  Suspend s;
  s.kind = Suspend::Kind::kPark;
  s.park = kind;
  s.deadline = deadline;
  s.publish = release;
  s.arg = arg;
  Worker::suspend(f, s);
  const WakeReason r = f->wake_reason;
  return r == WakeReason::kTimedOut && from_scope ? WakeReason::kScopeExpired : r;
}

}  // namespace spindle::detail
