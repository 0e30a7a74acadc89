#include "spindle/sched/rw_lock.hpp"

#include "spindle/base/assert.hpp"
#include "spindle/base/lock_guard.hpp"

namespace spindle {

bool RwLock::take(Side side) {
  if (writer_) return false;
  if (side == Side::kExclusive) {
    if (readers_ > 0) return false;
    writer_ = true;
    return true;
  }
  if (!waiting_writers_.empty()) return false;
  ++readers_;
  return true;
}

detail::WaitQueue& RwLock::queue(Side side) noexcept {
  return side == Side::kExclusive ? waiting_writers_ : waiting_readers_;
}

void RwLock::admit(bool readers_first) {
  if (writer_) return;
  // A notified waiter holds what it waited for: count it here, for it.
  if (readers_first) readers_ += waiting_readers_.notify_all();
  if (readers_ == 0 && waiting_writers_.notify_one()) {
    writer_ = true;
    return;
  }
  if (waiting_writers_.empty()) readers_ += waiting_readers_.notify_all();
}

void RwLock::lock_untimed(Side side) noexcept {
  lock_.lock();
  if (take(side)) {
    lock_.unlock();
    return;
  }
  detail::WaitNode node;
  // Uninterruptible and untimed: only a hand-over in admit() ends it.
  detail::wait_in(queue(side), node, lock_, kNoDeadline, detail::ParkKind::kUninterruptible,
                  side == Side::kExclusive ? "rw_lock write" : "rw_lock read");
}

Result<bool> RwLock::lock_until(Side side, Deadline deadline) {
  const bool exclusive = side == Side::kExclusive;
  auto r = detail::wait_unless(queue(side), lock_, deadline,
                               exclusive ? "rw_lock write" : "rw_lock read",
                               [&]() SPINDLE_REQUIRES(lock_) { return take(side); });
  if (exclusive && !(r && *r)) {
    // This writer no longer waits: readers it held back may be due.
    LockGuard guard(lock_);
    admit(false);
  }
  return r;
}

void RwLock::lock() noexcept { lock_untimed(Side::kExclusive); }

bool RwLock::try_lock() noexcept {
  LockGuard guard(lock_);
  return take(Side::kExclusive);
}

Result<bool> RwLock::try_lock_until(Deadline deadline) {
  return lock_until(Side::kExclusive, deadline);
}

void RwLock::unlock() noexcept {
  LockGuard guard(lock_);
  SPINDLE_ASSERT(writer_, "RwLock::unlock without a writer holding it");
  writer_ = false;
  admit(true);
}

void RwLock::lock_shared() noexcept { lock_untimed(Side::kShared); }

bool RwLock::try_lock_shared() noexcept {
  LockGuard guard(lock_);
  return take(Side::kShared);
}

Result<bool> RwLock::try_lock_shared_until(Deadline deadline) {
  return lock_until(Side::kShared, deadline);
}

void RwLock::unlock_shared() noexcept {
  LockGuard guard(lock_);
  SPINDLE_ASSERT(readers_ > 0, "RwLock::unlock_shared without a reader holding it");
  --readers_;
  admit(false);
}

}  // namespace spindle
