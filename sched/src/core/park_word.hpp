// The park word: how a parked fiber is woken exactly once.
//
// Every fiber has one atomic word, Fiber::wake_word, laid out as
//
//     epoch << 3 | kParkAborted | ParkKind
//
// `epoch` numbers the fiber's parks (Fiber::epoch, written only by the fiber
// itself), the abort flag is set by the fiber's abort and never cleared but
// by an I/O completion (step 5), and the kind says what may end the current
// park (kNone: not parked). Whoever moves the kind from its park's value to
// kNone owns the fiber's run right and makes it ready; everyone else fails.
//
// The protocol, in the order of one park:
//
//  1. The fiber bumps its epoch, notes what it waits on, and switches away
//     (Worker::suspend). Nothing of the park is visible to other threads yet.
//  2. Arm (arm_park), on the stack that took over once the fiber's context is
//     saved: one seq_cst compare-exchange from (old epoch, flag, kNone) to
//     (epoch, flag, kind). An interruptible park whose flag is already set is
//     not armed: the arming worker makes the fiber ready with kAborted. Every
//     other kind arms with the flag kept (a kIo park's publish reads the
//     flag after the arm and cancels its own operation; an uninterruptible
//     one ignores aborts until it ends).
//  3. Publish (the Suspend's callback): the fiber becomes findable by its
//     wakers (a wait queue is unlocked, an I/O operation started). From the arm on,
//     the fiber may run elsewhere and be freed: the arming worker reads
//     nothing of it after the arm but what it copied before.
//  4. Claim (claim_park), any thread: an acq_rel compare-exchange from
//     (epoch, flag, kind) to (epoch, flag, kNone), only while the word holds
//     the waker's epoch and a kind its reason may end (notify and deadline:
//     kInterruptible and kUninterruptible; abort: kInterruptible only). One
//     waker wins; stale ones (an older epoch, or the park already claimed)
//     fail and do nothing.
//  5. An I/O completion (end_io_park), on the worker whose backend held the
//     operation, is the only waker of a kIo park: a release plain store of
//     (epoch, kNone). The only write it can race is step 6's flag, which it
//     may drop; step 7 restores it.
//  6. Abort (Fiber::deliver_abort), any thread, after the fiber's node is
//     marked aborted: a seq_cst fetch_or of kParkAborted, then by the kind it
//     found: kInterruptible, claim with kAborted (step 4); kIo, send the
//     owning worker a CancelIo message; kNone or kUninterruptible, nothing
//     (the fiber's next interruptible park sees the flag at step 2, and every
//     interruptible call checks Node::aborted first).
//  7. CancelIo on the owning worker (confirm_io_abort): if the flag is gone, a
//     completion dropped it: step 6 again, against whatever the fiber waits on
//     now. Otherwise, if the word still holds that kIo park, cancel its
//     operation.
//
// Why no abort is lost: steps 2 and 6 are seq_cst read-modify-writes of one
// word, so one of them is first. Abort first: the arm sees the flag. Arm
// first: the abort sees the kind.
//
// Rejected: a compare-exchange for the completion (step 5) too. It would keep
// the flag, but every completion would pay a locked instruction to cover an
// abort that lands in the same instant; the message (step 7) repairs that
// rare case instead.
#pragma once

#include <cstdint>

#include "spindle/sched/detail/fiber.hpp"
#include "spindle/sched/detail/wait.hpp"

namespace spindle::detail {

inline constexpr std::uint64_t kParkKindMask = 3;
inline constexpr std::uint64_t kParkAborted = 4;
constexpr std::uint64_t park_word(std::uint64_t epoch, ParkKind kind) noexcept {
  return epoch << 3 | static_cast<std::uint64_t>(kind);
}
constexpr std::uint64_t park_epoch(std::uint64_t word) noexcept { return word >> 3; }
constexpr ParkKind park_kind(std::uint64_t word) noexcept {
  return static_cast<ParkKind>(word & kParkKindMask);
}

// Step 2. Arms park `epoch` of `f` as `kind`; false if `kind` is
// kInterruptible and the fiber was aborted first (then nothing is armed and
// no waker can claim the park: the caller makes the fiber ready). Called by
// the worker that `f` switched away from.
inline bool arm_park(Fiber& f, std::uint64_t epoch, ParkKind kind) noexcept {
  std::uint64_t w = f.wake_word.load(std::memory_order_relaxed);
  for (;;) {
    const std::uint64_t flag = w & kParkAborted;
    if (flag && kind == ParkKind::kInterruptible) return false;
    // seq_cst; pairs with the fetch_or in deliver_abort (one of the two is first).
    if (f.wake_word.compare_exchange_weak(w, park_word(epoch, kind) | flag,
                                          std::memory_order_seq_cst, std::memory_order_relaxed)) {
      return true;
    }
  }
}

// Whether park `epoch` of `f` is still armed (not yet claimed or ended). Any
// thread; a snapshot.
inline bool park_waiting(const Fiber& f, std::uint64_t epoch) noexcept {
  // acquire; pairs with the arm and the claims.
  const std::uint64_t w = f.wake_word.load(std::memory_order_acquire);
  return park_epoch(w) == epoch && park_kind(w) != ParkKind::kNone;
}

// Step 4. Claims park `epoch` of `f` for `reason`; false if that park already
// ended or is not of a kind `reason` may end. The winner owns `f`'s run
// right. Any thread.
inline bool claim_park(Fiber& f, std::uint64_t epoch, WakeReason reason) noexcept {
  // acquire; pairs with the seq_cst arm in arm_park.
  std::uint64_t w = f.wake_word.load(std::memory_order_acquire);
  for (;;) {
    if (park_epoch(w) != epoch) return false;
    const ParkKind kind = park_kind(w);
    if (kind == ParkKind::kNone || kind == ParkKind::kIo) return false;
    if (reason == WakeReason::kAborted && kind != ParkKind::kInterruptible) return false;
    // acq_rel; pairs with the arm, and with other claimers of this epoch.
    if (f.wake_word.compare_exchange_weak(w, w & ~kParkKindMask, std::memory_order_acq_rel,
                                          std::memory_order_acquire)) {
      return true;
    }
  }
}

// Step 5. Ends the kIo park of `f` for its operation's completion. On the
// worker whose backend held the operation.
inline void end_io_park(Fiber& f) noexcept {
  const std::uint64_t w = f.wake_word.load(std::memory_order_relaxed);
  // release; pairs with the acquire loads of claimers (who all see kNone now)
  // and of confirm_io_abort.
  f.wake_word.store(w & ~kParkKindMask, std::memory_order_release);
}

// Step 7. Whether the kIo park `epoch` of `f` is still armed with the abort
// flag, so that its operation should be cancelled; if a completion dropped
// the flag, delivers the abort again first. On the worker that got the
// CancelIo message.
bool confirm_io_abort(Fiber& f, std::uint64_t epoch) noexcept;

// Step 4 for a waker: claims park `epoch` of `f` for `reason` and, if it
// wins, records the reason and makes `f` ready (Scheduler::put_woken). Any
// thread.
bool wake_fiber(Fiber* f, std::uint64_t epoch, WakeReason reason) noexcept;

}  // namespace spindle::detail
