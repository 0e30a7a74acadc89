// NextSlot: a worker's one-fiber slot that runs before its run queue, and
// the streak policy that keeps it from starving the queue.
//
// A fiber woken by the fiber running on a worker goes into the slot, so two
// fibers handing work to each other keep their worker and their stacks hot
// (Go's runnext, tokio's LIFO slot). A streak is the run of fibers taken from
// the slot in a row; once it has had its budget the fiber in the slot goes to
// the back of the run queue instead.
//
// Worker-affine: never stolen, touched only by its worker.
#pragma once

#include <chrono>
#include <cstdint>
#include <utility>

#include "spindle/base/time.hpp"
#include "spindle/sched/detail/fiber.hpp"

namespace spindle::detail {

class NextSlot {
 public:
  // How the fiber in the slot relates to the one that put it there.
  enum class Link : std::uint8_t {
    kWoken,     // woken by it: counts against kNextRunBudget
    kInherits,  // continues its thread of control (a joiner to the child it
                // claimed, an ended fiber to its joiner): kInheritedRunBudget
  };

  // Fibers taken from the slot in a row before the one in it goes to the back
  // of the run queue: two fibers waking each other keep their worker for this
  // many hand-overs...
  static constexpr std::uint32_t kNextRunBudget = 32;
  // ... and hand-overs that continue one thread of control, as a call and its
  // return do, for this many: a fork-join tree runs depth first.
  static constexpr std::uint32_t kInheritedRunBudget = 256;
  // Past its budget, a streak of wakes goes on while it is quick: for
  // kStreakSlice from the first fiber over budget (each streak that ends
  // sends the worker to fibers whose stacks have gone cold). The clock is
  // read then and every kStreakCheck fibers after, so a streak of slow fibers
  // ends kStreakCheck past its budget. Inheriting hand-overs keep their
  // count: the extension gained a fork-join tree nothing.
  static constexpr std::uint32_t kStreakCheck = 16;
  static constexpr auto kStreakSlice = std::chrono::microseconds(100);

  bool empty() const noexcept { return fiber_ == nullptr; }

  // Puts `f` in the empty slot.
  void put(Fiber* f, Link link) noexcept {
    fiber_ = f;
    link_ = link;
  }
  // Puts `f` in the slot and returns the fiber it displaces (or null).
  Fiber* replace(Fiber* f, Link link) noexcept {
    Fiber* older = std::exchange(fiber_, f);
    link_ = link;
    return older;
  }
  // Puts back `f`, just taken, which could not start: it goes first, whatever
  // the streak's count.
  void restore(Fiber* f) noexcept {
    fiber_ = f;
    restored_ = true;
  }

  // The fiber in the slot if the streak has budget left for it. Otherwise
  // null, with the slot's fiber (if any) moved to `*over_budget` for the run
  // queue, and the streak ended.
  Fiber* take(Fiber** over_budget) noexcept {
    *over_budget = nullptr;
    if (fiber_) {
      const bool inherits = link_ == Link::kInherits;
      link_ = Link::kWoken;
      std::uint32_t& runs = inherits ? inherited_runs_ : woken_runs_;
      if (std::exchange(restored_, false) ||
          ++runs <= (inherits ? kInheritedRunBudget : kNextRunBudget) ||
          (!inherits && has_time())) {
        return std::exchange(fiber_, nullptr);
      }
      *over_budget = std::exchange(fiber_, nullptr);
    }
    woken_runs_ = 0;
    inherited_runs_ = 0;
    overtime_ = 0;
    return nullptr;
  }

 private:
  // Counts one more woken fiber taken past the budget; false once the streak
  // has had kStreakSlice.
  bool has_time() noexcept {
    const std::uint32_t n = overtime_++;
    if (n % kStreakCheck != 0) return true;
    const Deadline now = Clock::now();
    if (n == 0) {
      overtime_start_ = now;
      return true;
    }
    return now - overtime_start_ < kStreakSlice;
  }

  Fiber* fiber_ = nullptr;
  Link link_ = Link::kWoken;
  bool restored_ = false;             // fiber_ was put back by restore(): it goes first
  std::uint32_t woken_runs_ = 0;      // fibers taken in a row, not inheriting
  std::uint32_t inherited_runs_ = 0;  // ... inheriting
  std::uint32_t overtime_ = 0;        // ... past the budget of wakes
  Deadline overtime_start_{};         // when the first fiber past the budget was taken
};

}  // namespace spindle::detail
