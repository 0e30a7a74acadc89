// SpinLock: the short internal lock of spindle's sync primitives and task state.
#pragma once

#include <sched.h>

#include <atomic>

namespace spindle::detail {

// SpinLocks this thread holds, and whether it has worker wake-ups waiting for
// the count to reach zero: a wake-up's futex or eventfd syscall takes
// microseconds (an inter-processor interrupt, a VM exit), and made under a
// primitive's lock it would stall the very fiber it wakes, which re-takes that
// lock first thing. Written only by the owning thread.
inline thread_local unsigned t_spinlocks_held = 0;
inline thread_local bool t_unparks_deferred = false;
// Performs the wake-ups deferred while spinlocks were held (sched/src/unpark.cpp).
void run_deferred_unparks() noexcept;

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
        ++t_spinlocks_held;
        return;
      }
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins < 64) {
#if defined(__x86_64__) || defined(__i386__)
          __builtin_ia32_pause();
#endif
        } else {
          ::sched_yield();
        }
      }
    }
  }
  bool try_lock() noexcept {
    if (locked_.load(std::memory_order_relaxed) ||
        locked_.exchange(true, std::memory_order_acquire)) {
      return false;
    }
    ++t_spinlocks_held;
    return true;
  }
  // release; pairs with the acquire in lock(). Must run on the thread that
  // locked (a parking fiber's unlock runs on its worker, the same thread).
  void unlock() noexcept {
    locked_.store(false, std::memory_order_release);
    if (--t_spinlocks_held == 0 && t_unparks_deferred) run_deferred_unparks();
  }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace spindle::detail
