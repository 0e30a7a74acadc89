// TimerHeap: one worker's sleep timers (sleep_for, timed waits).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <vector>

#include "spindle/sched/detail/fiber.hpp"

namespace spindle::detail {

// Worker-affine, except note_stale(). A binary min-heap of (deadline, fiber,
// park epoch) entries, each holding a reference on its fiber. An entry whose
// park ended some other way stays until it fires (claiming nothing) or until
// compaction drops it: compaction runs when the stale count passes 64 and the
// live count, and keeps the entries whose park `waiting` says is still on.
// Sleeps use no ring slot.
class TimerHeap {
 public:
  // Whether park `epoch` of `fiber` is still waiting. Any thread's view of
  // the fiber: a stale answer keeps or drops a timer that no longer matters.
  using Waiting = bool (*)(const Fiber& fiber, std::uint64_t epoch) noexcept;

  explicit TimerHeap(Waiting waiting) noexcept : waiting_(waiting) {}
  ~TimerHeap();
  TimerHeap(const TimerHeap&) = delete;
  TimerHeap& operator=(const TimerHeap&) = delete;

  void add(Deadline when, Fiber* fiber, std::uint64_t epoch);

  // Removes every entry due at `now` and calls on_due(fiber, epoch) for each,
  // after all due entries are removed.
  template <class F>
  void expire(Deadline now, F&& on_due);

  std::optional<Deadline> next() const noexcept {
    if (heap_.empty()) return std::nullopt;
    return heap_.front().when;
  }
  std::size_t size() const noexcept { return heap_.size(); }

  // Any thread: a park with a timer here ended another way.
  void note_stale() noexcept { stale_.fetch_add(1, std::memory_order_relaxed); }

 private:
  struct Entry {
    Deadline when;
    Fiber* fiber;
    std::uint64_t epoch;
  };
  static bool later(const Entry& a, const Entry& b) noexcept { return a.when > b.when; }
  void maybe_compact();

  std::vector<Entry> heap_;
  std::vector<Entry> due_;  // scratch for expire()
  std::atomic<std::uint32_t> stale_{0};
  const Waiting waiting_;
};

}  // namespace spindle::detail

#include <algorithm>

namespace spindle::detail {

template <class F>
void TimerHeap::expire(Deadline now, F&& on_due) {
  maybe_compact();
  while (!heap_.empty() && heap_.front().when <= now) {
    std::pop_heap(heap_.begin(), heap_.end(), later);
    due_.push_back(heap_.back());
    heap_.pop_back();
  }
  for (const Entry& e : due_) {
    on_due(e.fiber, e.epoch);
    e.fiber->unref();
  }
  due_.clear();
}

}  // namespace spindle::detail
