// BasicSpinLock: the short internal lock of spindle's sync primitives and
// shared state, with hooks its user may run on every acquire and release.
#pragma once

#include <sched.h>

#include <atomic>

#include "spindle/base/thread_annotations.hpp"

namespace spindle::detail {

// Hooks that do nothing: a lock no one needs to count.
struct NoLockHooks {
  static void taken() noexcept {}
  static void released() noexcept {}
};

// Thread-safe. Test-and-test-and-set with a pause, falling back to
// sched_yield() so a preempted holder on a busy core can run. Critical
// sections under it are a few dozen instructions. Hooks::taken() runs on the
// locking thread after each acquire, Hooks::released() after each release:
// sched's SpinLock counts the locks a thread holds with them.
template <class Hooks>
class SPINDLE_CAPABILITY("spinlock") BasicSpinLock {
 public:
  void lock() noexcept SPINDLE_ACQUIRE() {
    for (int spins = 0;; ++spins) {
      // acquire; pairs with the release in unlock().
      if (!locked_.exchange(true, std::memory_order_acquire)) {
        Hooks::taken();
        return;
      }
      while (locked_.load(std::memory_order_relaxed)) back_off(spins);
    }
  }
  bool try_lock() noexcept SPINDLE_TRY_ACQUIRE(true) {
    if (locked_.load(std::memory_order_relaxed) ||
        locked_.exchange(true, std::memory_order_acquire)) {
      return false;
    }
    Hooks::taken();
    return true;
  }
  // Returns once the lock is seen free, without taking it: an owner that took
  // it before this call (in happens-before order) has released it, and what it
  // did under the lock is visible to the caller.
  void wait_unlocked() const noexcept SPINDLE_EXCLUDES(this) {
    // acquire; pairs with the release in unlock().
    for (int spins = 0; locked_.load(std::memory_order_acquire);) back_off(spins);
  }
  // release; pairs with the acquire in lock(). Must run on the thread that
  // locked.
  void unlock() noexcept SPINDLE_RELEASE() {
    locked_.store(false, std::memory_order_release);
    Hooks::released();
  }

 private:
  // One wait for a held lock: a pause for the first 64, then sched_yield().
  static void back_off(int& spins) noexcept {
    if (++spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    } else {
      ::sched_yield();
    }
  }

  std::atomic<bool> locked_{false};
};

// A spinlock for state that is never touched while waking a worker, so it
// needs no count of held locks (sched's SpinLock is the one that does).
using PlainSpinLock = BasicSpinLock<NoLockHooks>;

}  // namespace spindle::detail
