// Waiting: the one way a fiber or a plain thread blocks on a spindle sync
// primitive, and the single-winner wake that ends the wait.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "spindle/base/assert.hpp"
#include "spindle/base/intrusive_list.hpp"
#include "spindle/base/result.hpp"
#include "spindle/base/thread_annotations.hpp"
#include "spindle/base/time.hpp"
#include "spindle/sched/detail/spinlock.hpp"

namespace spindle {
namespace detail {

class Fiber;

// How a wait ended. The first of notify, deadline and abort to claim the wait
// decides it; the others find it already claimed and do nothing. A wait whose
// deadline came from the caller's deadline scope (this_fiber::with_deadline)
// reports that deadline as kScopeExpired: errc::timed_out, also for a call
// that has no deadline of its own.
enum class WakeReason : std::uint8_t { kNotified, kTimedOut, kAborted, kScopeExpired };

// What may end a fiber's park (the low two bits of Fiber::wake_word; the
// protocol is in sched/src/core/park_word.hpp).
enum class ParkKind : std::uint64_t {
  kNone = 0,             // not parked
  kInterruptible = 1,    // notify, deadline or abort
  kIo = 2,               // only the operation's completion (abort and deadline cancel it)
  kUninterruptible = 3,  // notify or deadline; abort waits until it ends
};

// The one claim shared by the WaitNodes of a select, which wait in several
// queues at once: the first notify to move `word` from 0 wins, for its node
// alone. A thread's select also sleeps on `word` (a futex).
struct SelectClaim {
  static constexpr std::uint32_t kTimedOut = ~std::uint32_t{0};
  // 0 open; 1 + the winning node's index; kTimedOut (a thread's deadline).
  std::atomic<std::uint32_t> word{0};
};

// One waiter in a primitive's wait queue: a fiber (woken through the
// scheduler) or a plain thread (woken through a futex). Lives on the waiter's
// stack for the length of one wait.
//
// Invariant: the links are guarded by the owning primitive's lock.
struct WaitNode {
  WaitNode() noexcept;  // for the calling fiber, or the calling thread outside a fiber
  // Node `index` of a select of the calling fiber (its park epoch taken
  // already by the select) or thread, claimed through `claim`.
  WaitNode(SelectClaim& claim, std::uint32_t index) noexcept;

  // Claims the wait with `reason` and makes the waiter runnable. Returns false
  // if it was already claimed (woken, timed out or aborted; for a select's
  // node: through any of its nodes). Any thread. The caller holds the owning
  // primitive's lock and has unlinked the node (wait_in relies on both).
  bool notify(WakeReason reason = WakeReason::kNotified) noexcept;

  ListLinks<WaitNode> links;
  Fiber* fiber = nullptr;                      // null for a thread waiter
  std::uint64_t epoch = 0;                     // the fiber park this node waits in
  std::atomic<std::uint32_t> thread_state{0};  // thread waiter: 0 waiting, else 1 + WakeReason
  SelectClaim* claim = nullptr;                // a select's node: the claim it shares
  std::uint32_t index = 0;                     // a select's node: its case
  void* data = nullptr;                        // the primitive's payload (e.g. a channel slot)
};

// A FIFO of WaitNodes. Not thread-safe: guarded by its owner's lock.
class WaitQueue {
 public:
  bool empty() const noexcept { return nodes_.empty(); }
  WaitNode* front() const noexcept { return nodes_.front(); }
  void push_back(WaitNode* n) noexcept { nodes_.push_back(n); }
  WaitNode* pop_front() noexcept { return nodes_.pop_front(); }
  void remove(WaitNode* n) noexcept { nodes_.remove(n); }  // n must be linked here
  // Whether `n` is in a queue; read under that queue's lock.
  static bool linked(const WaitNode* n) noexcept { return List::linked(n); }

  // Pops nodes until one accepts notify(reason); returns it, or null.
  WaitNode* notify_one(WakeReason reason = WakeReason::kNotified) noexcept;
  // Pops and notifies every node; returns how many accepted.
  std::size_t notify_all(WakeReason reason = WakeReason::kNotified) noexcept;

 private:
  using List = IntrusiveList<WaitNode, &WaitNode::links>;
  List nodes_;
};

// Suspends the caller until `node` is notified, `deadline` passes, or (kind
// kInterruptible, fibers only) the calling fiber is aborted. An
// interruptible wait also ends at the caller's deadline scope
// (kScopeExpired). `node` must be
// linked in a queue guarded by `lock`, which the caller holds; the wait
// releases it once the caller can be woken (for a fiber: after its context is
// saved) and returns with it released. On kTimedOut or kAborted the node may
// still be linked: the caller unlinks it under the lock. `what` names the
// primitive in fiber dumps (a string literal).
// Suspends: always, unless already claimed before the caller could block.
WakeReason wait(WaitNode& node, SpinLock& lock, Deadline deadline,
                ParkKind kind = ParkKind::kInterruptible, const char* what = "wait") noexcept
    SPINDLE_RELEASE(lock);

// wait() for a fiber that holds several locks: the park is as wait()'s (with
// the deadline scope), and `release(arg)` releases the locks once the fiber
// can be woken. Fibers only.
// Suspends: always, unless already claimed before the caller could block.
WakeReason park_fiber(WaitNode& node, Deadline deadline, ParkKind kind, const char* what,
                      void (*release)(void* arg) noexcept, void* arg) noexcept;

// push_back(node) on `queue`, then wait(). Afterwards, if the wait ended by a
// notify (whose notifier, holding `lock`, unlinked the node first), waits
// until `lock` is seen free; otherwise takes `lock` once more to unlink the
// node. Either way the call returns only after a notifier is done with the
// primitive: a caller may destroy the primitive once this returns. Returns
// with `lock` released.
// Suspends: as wait().
WakeReason wait_in(WaitQueue& queue, WaitNode& node, SpinLock& lock, Deadline deadline,
                   ParkKind kind = ParkKind::kInterruptible, const char* what = "wait") noexcept
    SPINDLE_RELEASE(lock);

// True when called on a fiber (a worker thread running a fiber).
bool in_fiber() noexcept;

// True when called on a fiber that is aborted. Every interruptible blocking
// call checks it first: in an aborted fiber it returns errc::aborted even if
// it would not have blocked.
bool current_aborted() noexcept;

// The result of a timed wait: notified -> true, deadline -> false, abort ->
// errc::aborted, the deadline scope's -> errc::timed_out.
inline Result<bool> timed_result(WakeReason r) noexcept {
  if (r == WakeReason::kAborted) return failure(errc::aborted);
  if (r == WakeReason::kScopeExpired) return failure(errc::timed_out);
  return r == WakeReason::kNotified;
}

// A timed wait's result for its untimed form, which cannot time out.
inline Result<void> untimed(const Result<bool>& r) noexcept {
  if (!r) return failure(r.error());
  return {};
}

// The wait of a primitive whose own state says whether to block. Checks abort
// first (errc::aborted). Then, under `lock`, `take()` (annotated
// SPINDLE_REQUIRES of the lock) looks at the state and takes what the caller
// waits for if it is there: true ends the call with true. Otherwise the caller
// waits in `queue` until a notifier hands it over (true), `deadline` (false) or
// abort (errc::aborted). Returns with `lock` released.
// Suspends: unless take() succeeds.
template <class Take>
Result<bool> wait_unless(WaitQueue& queue, SpinLock& lock, Deadline deadline, const char* what,
                         Take take) SPINDLE_NO_THREAD_SAFETY_ANALYSIS {
  if (current_aborted()) return failure(errc::aborted);
  lock.lock();
  if (take()) {
    lock.unlock();
    return true;
  }
  WaitNode node;
  return timed_result(wait_in(queue, node, lock, deadline, ParkKind::kInterruptible, what));
}

}  // namespace detail
}  // namespace spindle
