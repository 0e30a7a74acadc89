// Spinner: the adaptive idle spinner a worker runs before it futex-waits (the
// reference's spinner.rs, PR #3618).
//
// An idle worker checks for work a bounded number of times before paying
// for a sleep and the wake that ends it: a futex sleep when it has no I/O in
// flight; with I/O in flight, the sleep in the backend's wait(), if the
// backend sees completions without a system call (io_uring: its CQ and the
// IORING_SQ_TASKRUN flag in shared memory) and the runtime has other
// workers. The budget
// adapts: a hit (work found while spinning) grows it by 25%; a miss shrinks it
// by 12.5%, but never below a "near-miss floor" that tracks how long recent
// short parks lasted, nor below the configured minimum; a park that ended
// within `quick_wake_us` (the spin gave up just too early) grows the budget by
// 50% and pulls the floor toward that park's length. Budgets are counted in
// loop iterations, calibrated once per process against the clock.
//
// The reference spins only before the futex sleep, and rejected spinning on
// the completion queue before io_uring_enter. The CQ alone shows little
// here: with DEFER_TASKRUN a completion reaches it only once its thread
// enters the kernel. The SQ ring's TASKRUN flag shows it at once; with it, a
// fiber on another worker answering through a pipe or socket no longer costs
// a sleep and a cross-CPU wake-up per message (pipe_pingpong at 2 workers:
// about 2.7 times the round trips). Rejected: a fixed budget (too short under
// bursty load, too costly when the machine is shared).
#pragma once

#include <chrono>
#include <cstdint>

namespace spindle::detail {

// The runtime fills this from spindle::IdleSpinner. `budget_us` is the initial
// and minimum spin budget (0 disables spinning), `max_budget_us` its cap, and a
// park no longer than `quick_wake_us` counts as a near miss.
struct SpinnerConfig {
  std::uint32_t budget_us = 2;
  std::uint32_t max_budget_us = 10;
  std::uint32_t quick_wake_us = 10;
};

// One CPU relaxation hint: `pause` on x86, a compiler barrier elsewhere.
inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  asm volatile("" ::: "memory");
#endif
}

// Worker-affine: not thread-safe; each worker owns one and calls spin() and
// on_wake() from its own thread only.
//
// Invariant: min_budget() <= budget() <= max_budget() (all 0 when disabled), and
// near_miss_floor() <= max_budget().
class Spinner {
 public:
  // Throws std::invalid_argument if cfg.budget_us > cfg.max_budget_us. The first
  // Spinner of the process runs the calibration (a few milliseconds).
  explicit Spinner(SpinnerConfig cfg);

  // Checks `cond()` up to budget() times with a cpu_relax() between checks and
  // adapts the budget. Returns true as soon as cond() does; false when the
  // budget runs out, or at once without calling cond() if the spinner is
  // disabled.
  template <class Cond>
  bool spin(Cond&& cond) {
    if (budget_ == 0) return false;
    for (std::uint64_t i = 0; i < budget_; ++i) {
      if (cond()) {
        on_hit();
        return true;
      }
      cpu_relax();
    }
    on_miss();
    return false;
  }

  // Reports how long the worker stayed parked after a spin() that missed. A
  // park no longer than quick_wake_us grows the budget by half and moves the
  // near-miss floor a quarter of the way toward the park's length.
  void on_wake(std::chrono::nanoseconds parked);

  // True when budget_us was 0: spin() never spins.
  bool disabled() const { return budget_ == 0; }
  // The current budget, in iterations.
  std::uint64_t budget() const { return budget_; }
  // budget_us and max_budget_us converted to iterations.
  std::uint64_t min_budget() const { return min_budget_; }
  std::uint64_t max_budget() const { return max_budget_; }
  // The lower bound a miss may shrink the budget to (besides min_budget()).
  std::uint64_t near_miss_floor() const { return near_miss_floor_; }

  // Loop iterations (one probe + one cpu_relax()) per microsecond, measured
  // once per process on first use; at least 1.
  static std::uint64_t iterations_per_us();

 private:
  std::uint64_t step(std::uint64_t fraction) const noexcept;
  void on_hit();
  void on_miss();

  std::uint64_t iters_per_us_;
  std::uint64_t min_budget_;
  std::uint64_t max_budget_;
  std::chrono::nanoseconds quick_wake_;
  // Invariant: min_budget_ <= budget_ <= max_budget_.
  std::uint64_t budget_;
  // Invariant: near_miss_floor_ <= max_budget_.
  std::uint64_t near_miss_floor_;
};

}  // namespace spindle::detail
