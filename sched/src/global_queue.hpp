// GlobalQueue: the injection queue every pool worker takes from: spawns and
// wakes from outside the pool, and run-queue overflow.
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>

#include "spindle/sched/detail/fiber.hpp"

namespace spindle::detail {

// Thread-safe. A mutex-guarded intrusive FIFO (through Fiber::next) with its
// length mirrored in an atomic, so looking at an empty queue takes no lock.
//
// Invariant: len_ equals the list's length; it is stored only under mutex_.
class GlobalQueue {
 public:
  std::size_t len() const noexcept { return len_.load(std::memory_order_acquire); }
  bool empty() const noexcept { return len() == 0; }

  // Appends one fiber, or a chain of `n` fibers linked through next (oldest
  // first).
  void push(Fiber* f) noexcept { push_chain(f, f, 1); }
  void push_chain(Fiber* head, Fiber* tail, std::size_t n) noexcept;

  // Takes up to `max` fibers, oldest first, as a chain through next; returns
  // the head and stores the count in `n`. Null when empty.
  Fiber* take(std::size_t max, std::size_t& n) noexcept;

  // The reference's share for one worker: min(len / workers + 1, 128, len).
  static std::size_t share(std::size_t len, std::size_t workers) noexcept;

 private:
  mutable std::mutex mutex_;
  Fiber* head_ = nullptr;  // guarded by mutex_
  Fiber* tail_ = nullptr;  // guarded by mutex_
  // release under mutex_; pairs with the acquire in len().
  std::atomic<std::size_t> len_{0};
};

}  // namespace spindle::detail
