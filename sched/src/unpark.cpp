#include "unpark.hpp"

#include <cstddef>

#include "spindle/sched/detail/spinlock.hpp"
#include "worker.hpp"

namespace spindle::detail {
namespace {

constexpr std::size_t kMaxDeferred = 8;  // more are unparked at once
thread_local Worker* t_deferred[kMaxDeferred];
thread_local std::size_t t_deferred_count = 0;

}  // namespace

void unpark_after_locks(Worker* w) noexcept {
  if (t_spinlocks_held == 0 || t_deferred_count == kMaxDeferred) {
    w->unpark();
    return;
  }
  t_deferred[t_deferred_count++] = w;
  t_unparks_deferred = true;
}

void run_deferred_unparks() noexcept {
  t_unparks_deferred = false;
  const std::size_t n = t_deferred_count;
  t_deferred_count = 0;
  for (std::size_t i = 0; i < n; ++i) t_deferred[i]->unpark();
}

}  // namespace spindle::detail
