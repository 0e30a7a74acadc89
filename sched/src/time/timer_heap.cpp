#include "time/timer_heap.hpp"

namespace spindle::detail {

TimerHeap::~TimerHeap() {
  for (const Entry& e : heap_) e.fiber->unref();
}

void TimerHeap::add(Deadline when, Fiber* fiber, std::uint64_t epoch) {
  fiber->ref();
  heap_.push_back({when, fiber, epoch});
  std::push_heap(heap_.begin(), heap_.end(), later);
}

void TimerHeap::maybe_compact() {
  const std::uint32_t stale = stale_.load(std::memory_order_relaxed);
  // The count is a hint: notes for entries that already fired inflate it, and
  // compaction resets it.
  if (stale <= 64 || 2 * static_cast<std::size_t>(stale) <= heap_.size()) return;
  std::size_t kept = 0;
  for (const Entry& e : heap_) {
    if (waiting_(*e.fiber, e.epoch)) {
      heap_[kept++] = e;
    } else {
      e.fiber->unref();
    }
  }
  stale_.fetch_sub(stale, std::memory_order_relaxed);
  heap_.resize(kept);
  std::make_heap(heap_.begin(), heap_.end(), later);
}

}  // namespace spindle::detail
