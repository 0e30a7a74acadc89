// WaitGroup: wait for a counted set of fibers or threads to finish.
#pragma once

#include <cstdint>

#include "spindle/base/result.hpp"
#include "spindle/base/thread_annotations.hpp"
#include "spindle/sched/detail/spinlock.hpp"
#include "spindle/sched/detail/wait.hpp"

namespace spindle {

// Thread-safe. add(n) before starting the work, done() as each piece ends,
// wait() until the count is zero. The count going negative is a bug (abort).
// A plain thread blocks on a futex where a fiber parks. add(), done() and
// count() never suspend.
class WaitGroup {
 public:
  explicit WaitGroup(std::int64_t count = 0) noexcept : count_(count) {}

  void add(std::int64_t n = 1) noexcept;
  void done() noexcept { add(-1); }
  std::int64_t count() const noexcept;

  // errc::aborted if the fiber is aborted before the count reaches zero.
  // Suspends: until the count is zero.
  Result<void> wait() { return detail::untimed(wait_until(kNoDeadline)); }
  // true at zero, false if the deadline passed first; errc::aborted.
  // Suspends: until zero, the deadline, or abort.
  Result<bool> wait_until(Deadline deadline);

 private:
  mutable detail::SpinLock lock_;
  std::int64_t count_ SPINDLE_GUARDED_BY(lock_);
  detail::WaitQueue waiters_ SPINDLE_GUARDED_BY(lock_);
};

}  // namespace spindle
