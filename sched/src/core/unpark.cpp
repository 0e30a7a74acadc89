#include "core/unpark.hpp"

#include <cstddef>

#include "core/worker_remote.hpp"
#include "spindle/sched/detail/spinlock.hpp"

namespace spindle::detail {
namespace {

constexpr std::size_t kMaxDeferred = 8;  // more are unparked at once
thread_local unsigned t_spinlocks_held = 0;
thread_local WorkerRemote* t_deferred[kMaxDeferred];
thread_local std::size_t t_deferred_count = 0;

void run_deferred_unparks() noexcept {
  const std::size_t n = t_deferred_count;
  t_deferred_count = 0;
  for (std::size_t i = 0; i < n; ++i) t_deferred[i]->unpark();
}

}  // namespace

[[gnu::noinline]] void spinlock_taken() noexcept { ++t_spinlocks_held; }

[[gnu::noinline]] void spinlock_released() noexcept {
  if (--t_spinlocks_held == 0 && t_deferred_count != 0) run_deferred_unparks();
}

void unpark_after_locks(WorkerRemote* w) noexcept {
  if (t_spinlocks_held == 0 || t_deferred_count == kMaxDeferred) {
    w->unpark();
    return;
  }
  t_deferred[t_deferred_count++] = w;
}

}  // namespace spindle::detail
