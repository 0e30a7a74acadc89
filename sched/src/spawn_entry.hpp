// Spawn entries: how a queue tells the entry a spawn queued from a ready
// fiber's.
//
// A queue entry (run queue, global queue, claimed batch) is a Fiber* whose
// low bit says which it is. A ready fiber's entry is its plain pointer, and
// taking it is the right to run the fiber. A spawn entry has the bit set: the
// fiber has not started, and a joiner may have claimed it first
// (Fiber::expedite), so taking the entry is only a chance at the fiber, won
// by clearing Fiber::claimable. An entry that loses holds the reference the
// joiner took for it, and its taker drops it.
//
// A spawn entry is never dereferenced as a fiber before it is untagged, and
// never reaches a pinned list: spawned fibers are not pinned.
#pragma once

#include <cstdint>

#include "spindle/sched/detail/fiber.hpp"

namespace spindle::detail {

static_assert(alignof(Fiber) >= 2, "a spawn entry tags the low bit of a fiber pointer");

inline Fiber* spawn_entry(Fiber* f) noexcept {
  return reinterpret_cast<Fiber*>(reinterpret_cast<std::uintptr_t>(f) | 1);
}

inline bool is_spawn_entry(const Fiber* e) noexcept {
  return (reinterpret_cast<std::uintptr_t>(e) & 1) != 0;
}

// The fiber to run for entry `e`, or null when `e` is a spawn entry whose
// fiber a joiner claimed first (the entry's reference is dropped then).
inline Fiber* take_entry(Fiber* e) noexcept {
  if (!is_spawn_entry(e)) return e;
  Fiber* f = reinterpret_cast<Fiber*>(reinterpret_cast<std::uintptr_t>(e) & ~std::uintptr_t{1});
  bool won;
  if (f->handle_released()) {
    // No joiner can claim it any more, and one that did is seen: the entry
    // is alone with the flag.
    won = f->claimable.load(std::memory_order_relaxed);
    f->claimable.store(false, std::memory_order_relaxed);
  } else {
    // acq_rel: the winner of the claim, here or in expedite(), runs the fiber.
    won = f->claimable.exchange(false, std::memory_order_acq_rel);
  }
  if (won) return f;
  f->unref();
  return nullptr;
}

}  // namespace spindle::detail
