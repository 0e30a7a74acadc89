// Waiting: the one way a fiber or a plain thread blocks on a spindle sync
// primitive, and the single-winner wake that ends the wait.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

#include "spindle/base/assert.hpp"
#include "spindle/base/result.hpp"
#include "spindle/base/thread_annotations.hpp"
#include "spindle/base/time.hpp"
#include "spindle/sched/detail/spinlock.hpp"

namespace spindle {
namespace detail {

class Fiber;

// How a wait ended. The first of notify, deadline and abort to claim the wait
// decides it; the others find it already claimed and do nothing.
enum class WakeReason : std::uint8_t { kNotified, kTimedOut, kAborted };

// What may end a fiber's park (the low two bits of Fiber::wake_word).
enum class ParkKind : std::uint64_t {
  kNone = 0,             // not parked
  kInterruptible = 1,    // notify, deadline or abort
  kIo = 2,               // only the operation's CQE (abort and deadline cancel the op)
  kUninterruptible = 3,  // notify or deadline; abort waits until it ends
};

// Fiber::wake_word is epoch << 3 | kParkAborted (set by the fiber's abort) |
// ParkKind. Every write but the abort's preserves the flag, except an I/O
// completion's, which may drop one set at that moment; the CancelIo message
// that abort sends then sets it again (cancel_io).
inline constexpr std::uint64_t kParkKindMask = 3;
inline constexpr std::uint64_t kParkAborted = 4;
constexpr std::uint64_t park_word(std::uint64_t epoch, ParkKind kind) noexcept {
  return epoch << 3 | static_cast<std::uint64_t>(kind);
}
constexpr std::uint64_t park_epoch(std::uint64_t word) noexcept { return word >> 3; }
constexpr ParkKind park_kind(std::uint64_t word) noexcept {
  return static_cast<ParkKind>(word & kParkKindMask);
}

// One waiter in a primitive's wait queue: a fiber (woken through the
// scheduler) or a plain thread (woken through a futex). Lives on the waiter's
// stack for the length of one wait.
//
// Invariant: the links and `linked` are guarded by the owning primitive's lock.
struct WaitNode {
  WaitNode() noexcept;  // for the calling fiber, or the calling thread outside a fiber

  // Claims the wait with `reason` and makes the waiter runnable. Returns false
  // if it was already claimed (woken, timed out or aborted). Any thread. The
  // caller holds the owning primitive's lock and has unlinked the node
  // (wait_in relies on both).
  bool notify(WakeReason reason = WakeReason::kNotified) noexcept;

  WaitNode* prev = nullptr;
  WaitNode* next = nullptr;
  bool linked = false;
  Fiber* fiber = nullptr;                      // null for a thread waiter
  std::uint64_t epoch = 0;                     // the fiber park this node waits in
  std::atomic<std::uint32_t> thread_state{0};  // thread waiter: 0 waiting, else 1 + WakeReason
  void* data = nullptr;                        // the primitive's payload (e.g. a channel slot)
};

// Intrusive FIFO of WaitNodes. Not thread-safe: guarded by its owner's lock.
class WaitQueue {
 public:
  bool empty() const noexcept { return head_ == nullptr; }
  WaitNode* front() const noexcept { return head_; }
  void push_back(WaitNode* n) noexcept;
  WaitNode* pop_front() noexcept;
  void remove(WaitNode* n) noexcept;  // n must be linked here

  // Pops nodes until one accepts notify(reason); returns it, or null.
  WaitNode* notify_one(WakeReason reason = WakeReason::kNotified) noexcept;
  // Pops and notifies every node; returns how many accepted.
  std::size_t notify_all(WakeReason reason = WakeReason::kNotified) noexcept;

 private:
  WaitNode* head_ = nullptr;
  WaitNode* tail_ = nullptr;
};

// Suspends the caller until `node` is notified, `deadline` passes, or (kind
// kInterruptible, fibers only) the calling fiber is aborted. `node` must be
// linked in a queue guarded by `lock`, which the caller holds; the wait
// releases it once the caller can be woken (for a fiber: after its context is
// saved) and returns with it released. On kTimedOut or kAborted the node may
// still be linked: the caller unlinks it under the lock. `what` names the
// primitive in fiber dumps (a string literal).
// Suspends: always, unless already claimed before the caller could block.
WakeReason wait(WaitNode& node, SpinLock& lock, Deadline deadline,
                ParkKind kind = ParkKind::kInterruptible, const char* what = "wait") noexcept
    SPINDLE_RELEASE(lock);

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

// The result of a timed wait: notified -> true, deadline -> false, abort -> errc::aborted.
inline Result<bool> timed_result(WakeReason r) noexcept {
  if (r == WakeReason::kAborted) return failure(errc::aborted);
  return r == WakeReason::kNotified;
}

}  // namespace detail
}  // namespace spindle
