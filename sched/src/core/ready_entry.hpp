// Ready entries: what the run queues and the global queue hold.
//
// An entry is either a ready fiber's or a spawn's. Taking a ready fiber's
// entry is the right to run it. A spawn entry stands for a fiber that has not
// started and that a joiner may claim first (Fiber::expedite, which runs it
// at once on the joiner's worker), so taking the entry is only a chance at the
// fiber, won by clearing Fiber::claimable; an entry that loses holds the
// reference the joiner took for it, and its taker drops it.
//
// ReadyEntry is never defined: an entry is a fiber pointer with the low bit
// set for a spawn, made and read only through the functions below, so no
// queue entry is dereferenced as a fiber before it is claimed. Spawned fibers
// are not pinned, so a spawn entry never reaches a pinned list.
#pragma once

#include <cstdint>

#include "spindle/sched/detail/fiber.hpp"

namespace spindle::detail {

struct ReadyEntry;

static_assert(alignof(Fiber) >= 2, "a spawn entry tags the low bit of a fiber pointer");

// The entry of a ready fiber.
inline ReadyEntry* ready_entry(Fiber* f) noexcept { return reinterpret_cast<ReadyEntry*>(f); }

// The entry of a spawned fiber; the spawn has set Fiber::claimable.
inline ReadyEntry* spawn_entry(Fiber* f) noexcept {
  return reinterpret_cast<ReadyEntry*>(reinterpret_cast<std::uintptr_t>(f) | 1);
}

inline bool is_spawn_entry(const ReadyEntry* e) noexcept {
  return (reinterpret_cast<std::uintptr_t>(e) & 1) != 0;
}

// The fiber of entry `e`, which must not be dereferenced before the entry is
// claimed unless it is a ready fiber's (!is_spawn_entry(e)).
inline Fiber* entry_fiber(const ReadyEntry* e) noexcept {
  return reinterpret_cast<Fiber*>(reinterpret_cast<std::uintptr_t>(e) & ~std::uintptr_t{1});
}

// claim_entry() of a spawn entry, whose tag is already cleared from `f`.
Fiber* claim_spawned(Fiber* f) noexcept;

// The fiber to run for entry `e`, or null when `e` is a spawn entry whose
// fiber a joiner claimed first (the entry's reference is dropped then).
// Called by whoever took `e` from its queue.
inline Fiber* claim_entry(ReadyEntry* e) noexcept {
  Fiber* f = entry_fiber(e);
  return is_spawn_entry(e) ? claim_spawned(f) : f;
}

}  // namespace spindle::detail
