// SpinLock: the lock of sched's sync primitives and task state, a
// BasicSpinLock that counts the locks its thread holds.
#pragma once

#include "spindle/base/spinlock.hpp"

namespace spindle::detail {

// Counts the SpinLocks this thread holds (sched/src/core/unpark.cpp). A worker
// wake-up requested while any is held waits until the last is released: a
// wake-up's futex or eventfd syscall takes microseconds (an inter-processor
// interrupt, a VM exit), and made under a primitive's lock it would stall the
// very fiber it wakes, which waits for that lock first thing. Out of line on
// purpose: inlined into a fiber's code, the compiler may compute the
// thread-local's address once and reuse it after a park that moved the fiber
// to another thread.
void spinlock_taken() noexcept;
void spinlock_released() noexcept;

struct CountHeldLocks {
  static void taken() noexcept { spinlock_taken(); }
  static void released() noexcept { spinlock_released(); }
};

// Thread-safe. Critical sections under it never park a fiber; a fiber that
// parks while "holding" it hands the unlock to its worker, which runs it on
// the same thread after the fiber's context is saved (wait() in wait.hpp), so
// the count stays per thread.
using SpinLock = BasicSpinLock<CountHeldLocks>;

}  // namespace spindle::detail
