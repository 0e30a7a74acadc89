// Once: runs an initializer exactly once among fibers and plain threads.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <utility>

#include "spindle/base/thread_annotations.hpp"
#include "spindle/sched/detail/spinlock.hpp"
#include "spindle/sched/detail/wait.hpp"

namespace spindle {

// Thread-safe. call(fn) runs fn unless a call of this Once already completed;
// concurrent callers wait for the one that runs it. If fn throws, the Once
// stays not done, the exception propagates to that caller, and the run is
// handed to the longest-waiting caller (or, with none waiting, left to the
// next call), which runs its own fn. A plain thread blocks on a futex where
// a fiber parks. done() never suspends. fn must not call call() on the same
// Once (it would wait for itself).
class Once {
 public:
  Once() = default;
  Once(const Once&) = delete;
  Once& operator=(const Once&) = delete;

  // Returns once some call's fn has returned, after fn if this call ran it;
  // rethrows what this call's fn threw. Abort does not end the wait (as with
  // Mutex::lock): an aborted fiber returns or runs its fn as any other.
  // Suspends: while another caller runs its fn.
  template <class F>
  void call(F&& fn) {
    if (done() || !begin()) return;
    try {
      std::invoke(std::forward<F>(fn));
    } catch (...) {
      finish(false);
      throw;
    }
    finish(true);
  }

  // Whether a call's fn has returned. Acquire: what fn wrote is visible after true.
  bool done() const noexcept { return state_.load(std::memory_order_acquire) == State::kDone; }

 private:
  enum class State : std::uint8_t { kEmpty, kRunning, kDone };

  // true if the caller is to run fn (the state is now kRunning for it), false
  // once done.
  // Suspends: while another caller runs its fn.
  bool begin() noexcept;
  // Ends the caller's run: done if `ran`, else hands the run to a waiter.
  void finish(bool ran) noexcept;

  detail::SpinLock lock_;
  // Written under lock_; release pairs with the acquire in done().
  // Invariant: callers wait only while kRunning.
  std::atomic<State> state_{State::kEmpty};
  detail::WaitQueue waiters_ SPINDLE_GUARDED_BY(lock_);
};

}  // namespace spindle
