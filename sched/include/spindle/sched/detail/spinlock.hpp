// SpinLock: the short internal lock of spindle's sync primitives and task state.
#pragma once

#include <sched.h>

#include <atomic>

namespace spindle::detail {

// Counts the SpinLocks this thread holds (sched/src/unpark.cpp). A worker
// wake-up requested while any is held waits until the last is released: a
// wake-up's futex or eventfd syscall takes microseconds (an inter-processor
// interrupt, a VM exit), and made under a primitive's lock it would stall the
// very fiber it wakes, which waits for that lock first thing. Out of line on
// purpose: inlined into a fiber's code, the compiler may compute the
// thread-local's address once and reuse it after a park that moved the fiber
// to another thread.
void spinlock_taken() noexcept;
void spinlock_released() noexcept;

// Thread-safe. Test-and-test-and-set with a pause, falling back to
// sched_yield() so a preempted holder on a busy core can run. Critical
// sections under it are a few dozen instructions and never park a fiber; a
// fiber that parks while "holding" it hands the unlock to its worker, which
// runs it on the same thread after the fiber's context is saved.
class SpinLock {
 public:
  void lock() noexcept {
    for (int spins = 0;; ++spins) {
      // acquire; pairs with the release in unlock().
      if (!locked_.exchange(true, std::memory_order_acquire)) {
        spinlock_taken();
        return;
      }
      while (locked_.load(std::memory_order_relaxed)) back_off(spins);
    }
  }
  bool try_lock() noexcept {
    if (locked_.load(std::memory_order_relaxed) ||
        locked_.exchange(true, std::memory_order_acquire)) {
      return false;
    }
    spinlock_taken();
    return true;
  }
  // Returns once the lock is seen free, without taking it: an owner that took
  // it before this call (in happens-before order) has released it, and what it
  // did under the lock is visible to the caller.
  void wait_unlocked() const noexcept {
    // acquire; pairs with the release in unlock().
    for (int spins = 0; locked_.load(std::memory_order_acquire);) back_off(spins);
  }
  // release; pairs with the acquire in lock(). Must run on the thread that
  // locked (a parking fiber's unlock runs on its worker, the same thread).
  void unlock() noexcept {
    locked_.store(false, std::memory_order_release);
    spinlock_released();
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

}  // namespace spindle::detail
