// RwLock: a writer-preferring reader-writer lock (std SharedLockable) for
// fibers and plain threads.
#pragma once

#include <chrono>
#include <cstddef>

#include "spindle/base/result.hpp"
#include "spindle/base/thread_annotations.hpp"
#include "spindle/sched/detail/spinlock.hpp"
#include "spindle/sched/detail/wait.hpp"

namespace spindle {

// Thread-safe. Any number of readers or one writer. A fiber blocked here parks
// (its worker runs other fibers); a plain thread blocks on a futex. Works with
// std::unique_lock, std::shared_lock and std::scoped_lock (not their timed
// forms: the timed calls here return Result<bool>). Not recursive; may be
// unlocked by a different fiber or thread than locked it. try_lock(),
// try_lock_shared(), unlock() and unlock_shared() never suspend.
//
// Policy, writer-preferring with batches: once a writer waits, new readers
// wait behind it, so writers never starve. Unlocks hand the lock over (no
// barging): a writer's unlock admits every reader queued by then as one
// batch, or else the longest-waiting writer; the last reader's unlock admits
// the longest-waiting writer. Readers and writers alternate under contention,
// so neither starves. A writer that stops waiting (deadline, abort) admits the
// readers queued behind it if no other writer waits.
//
// The timed calls return true holding the lock, false if the deadline passed
// first, errc::aborted if the fiber is aborted (checked first). A Result<bool>
// converts to true whenever it holds a value: test *r or r.value().
class RwLock {
 public:
  RwLock() = default;

  // Abort does not end this wait: lock() always returns holding the lock.
  // Suspends: until no reader or writer holds the lock and it is handed over.
  void lock() noexcept;
  bool try_lock() noexcept;
  // Suspends: as lock(), or until the deadline or abort.
  Result<bool> try_lock_until(Deadline deadline);
  Result<bool> try_lock_for(std::chrono::nanoseconds timeout) {
    return try_lock_until(Clock::now() + timeout);
  }
  void unlock() noexcept;

  // Abort does not end this wait: lock_shared() always returns holding a share.
  // Suspends: while a writer holds the lock or waits for it.
  void lock_shared() noexcept;
  bool try_lock_shared() noexcept;
  // Suspends: as lock_shared(), or until the deadline or abort.
  Result<bool> try_lock_shared_until(Deadline deadline);
  Result<bool> try_lock_shared_for(std::chrono::nanoseconds timeout) {
    return try_lock_shared_until(Clock::now() + timeout);
  }
  void unlock_shared() noexcept;

 private:
  enum class Side : unsigned char { kShared, kExclusive };

  // Takes the lock for `side` if the policy lets a newcomer take it now.
  bool take(Side side) SPINDLE_REQUIRES(lock_);
  // The queue `side` waits in (its contents are guarded by lock_).
  detail::WaitQueue& queue(Side side) noexcept;
  // Hands the lock to waiters the policy admits now, unless a writer holds
  // it: the queued readers as a batch first if `readers_first`; then, with no
  // reader holding it, the longest-waiting writer; then, with no writer
  // waiting, the queued readers.
  void admit(bool readers_first) SPINDLE_REQUIRES(lock_);
  void lock_untimed(Side side) noexcept;
  Result<bool> lock_until(Side side, Deadline deadline);

  // Invariants (under lock_): writer_ implies readers_ == 0; readers wait only
  // while a writer holds the lock or waits; writers wait only while the lock
  // is held. A handed-over lock is counted before its waiter runs.
  detail::SpinLock lock_;
  bool writer_ SPINDLE_GUARDED_BY(lock_) = false;
  std::size_t readers_ SPINDLE_GUARDED_BY(lock_) = 0;
  detail::WaitQueue waiting_readers_ SPINDLE_GUARDED_BY(lock_);
  detail::WaitQueue waiting_writers_ SPINDLE_GUARDED_BY(lock_);
};

}  // namespace spindle
