// GlobalQueue: the injection queue every pool worker takes from: spawns and
// wakes from outside the pool, and run-queue overflow.
#pragma once

#include <atomic>
#include <cstddef>
#include <deque>

#include "core/ready_entry.hpp"
#include "spindle/base/thread_mutex.hpp"

namespace spindle::detail {

// Thread-safe. A mutex-guarded FIFO of fiber pointers with its length
// mirrored in an atomic, so looking at an empty queue takes no lock. Pointers
// in a deque rather than a list through Fiber::next: taking a batch touches
// no fiber's memory, where a list walk misses the cache once per fiber (the
// queue holds the fibers that overflowed, often long since evicted). A push
// that cannot get memory ends the process (std::terminate): losing a ready
// fiber would hang its joiners instead.
//
// Invariant: len_ equals fibers_.size(); it is stored only under mutex_.
class GlobalQueue {
 public:
  std::size_t len() const noexcept { return len_.load(std::memory_order_acquire); }
  bool empty() const noexcept { return len() == 0; }

  // Appends items[0..n), oldest first.
  void push(ReadyEntry* const* items, std::size_t n) noexcept;
  void push(ReadyEntry* e) noexcept { push(&e, 1); }

  // Moves up to `max` fibers, oldest first, to out[0..n) and returns n.
  std::size_t take(ReadyEntry** out, std::size_t max) noexcept;

  // The reference's share for one worker: min(len / workers + 1, 128, len).
  static constexpr std::size_t kMaxShare = 128;
  static std::size_t share(std::size_t len, std::size_t workers) noexcept;

 private:
  mutable ThreadMutex mutex_;
  std::deque<ReadyEntry*> fibers_ SPINDLE_GUARDED_BY(mutex_);
  // release under mutex_; pairs with the acquire in len().
  std::atomic<std::size_t> len_{0};
};

}  // namespace spindle::detail
