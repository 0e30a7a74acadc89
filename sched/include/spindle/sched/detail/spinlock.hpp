// SpinLock: the short internal lock of spindle's sync primitives and task state.
#pragma once

#include <sched.h>

#include <atomic>

namespace spindle::detail {

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
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
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
    return !locked_.load(std::memory_order_relaxed) &&
           !locked_.exchange(true, std::memory_order_acquire);
  }
  // release; pairs with the acquire in lock().
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace spindle::detail
