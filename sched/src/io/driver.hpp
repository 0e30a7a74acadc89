// IoDriver: what every backend adds to the worker's IoBackend interface:
// performing one operation for a fiber, and cancelling one. Deadlines and
// abort messages are handled here once for all backends, in terms of
// cancel().
#pragma once

#include <sys/wait.h>

#include <algorithm>
#include <cerrno>
#include <optional>

#include "core/current.hpp"
#include "core/io_backend.hpp"
#include "core/scheduler.hpp"
#include "core/worker.hpp"
#include "spindle/base/errc.hpp"
#include "spindle/sched/io.hpp"
#include "time/coarse_clock.hpp"

namespace spindle::detail {

struct IoRequest;

// Worker-affine, like IoBackend.
class IoDriver : public IoBackend {
 public:
  // `uring`: whether this is the UringDriver; `max_in_flight`:
  // Config::max_io_in_flight.
  IoDriver(bool uring, std::size_t max_in_flight) noexcept
      : uring_(uring), max_in_flight_(max_in_flight) {}

  // Whether this is the UringDriver, whose perform() run_io inlines.
  bool uring() const noexcept { return uring_; }

  // Whether perform() can run operations of `code` (the caller finds
  // another way, or fails with errc::unsupported, for those it cannot).
  virtual bool supports(IoCode code) const noexcept = 0;
  // One try of `op` for the calling fiber `f`, which runs on this driver's
  // worker (run_io's step): refusal() first, then at most one park, after
  // which it returns on whatever worker then runs the fiber, never while the
  // kernel may still use the operation's buffers. EINTR and EAGAIN come
  // back as errnos: run_io tries again.
  virtual Result<int> perform(Fiber* f, const IoOp& op, const IoOptions& options) noexcept = 0;
  // Asks the backend to end `r` early; it still completes through
  // complete_io(), once the kernel holds no reference to its buffers. A
  // no-op for a request already completing.
  virtual void cancel(IoRequest& r) noexcept = 0;

  // The most operations pending() may count: Config::max_io_in_flight.
  std::size_t max_in_flight() const noexcept { return max_in_flight_; }

  void expire(WheelEntry* entry) noexcept final;
  void cancel_parked(Fiber* fiber, std::uint64_t epoch) noexcept final;

 private:
  const bool uring_;
  const std::size_t max_in_flight_;
};

// The driver of worker `w`.
inline IoDriver& driver_of(Worker& w) noexcept { return static_cast<IoDriver&>(w.io()); }

// The driver of the calling thread's worker.
inline IoDriver& current_driver() noexcept {
  Worker* w = current_worker();
  SPINDLE_ASSERT(w != nullptr, "spindle I/O called outside a fiber");
  return driver_of(*w);
}

// Counts and logs (at most once a second per runtime) an operation refused
// because the calling worker has `limit` operations in flight.
void refuse_over_limit(std::size_t limit) noexcept;

// The refusals that come before an operation of fiber `f` starts on `d`:
// errc::aborted for an aborted fiber (cancellable calls), errc::timed_out
// for a deadline already past, errc::io_limit when `d` has
// Config::max_io_in_flight operations in flight.
inline std::optional<errc> refusal(const IoDriver& d, Fiber* f, const IoOptions& o) noexcept {
  if (o.cancellable && f->aborted()) return errc::aborted;
  if (o.timeout <= std::chrono::nanoseconds::zero()) return errc::timed_out;
  if (o.deadline != kNoDeadline && !surely_ahead(o.deadline) && o.deadline <= Clock::now()) {
    return errc::timed_out;
  }
  if (d.pending() >= d.max_in_flight()) [[unlikely]] {
    refuse_over_limit(d.max_in_flight());
    return errc::io_limit;
  }
  return std::nullopt;
}

// The deadline of an operation that starts to wait now: o.deadline, or the
// end of o.timeout from now if that is earlier. The call's limit
// (o.call_limit) takes it in place of its timeout.
inline Deadline wait_deadline(const IoOptions& o) noexcept {
  if (o.timeout == std::chrono::nanoseconds::max()) return o.deadline;
  const Deadline d = std::min(o.deadline, deadline_after(o.timeout));
  if (o.call_limit != nullptr) *o.call_limit = {.deadline = d};
  return d;
}

// One waitid(WNOHANG) of a kWaitid operation: 0 with its info filled,
// -EAGAIN if the child has no such state change yet, or -errno.
inline int waitid_now(const IoOp& op) noexcept {
  op.waitid.info->si_pid = 0;  // left 0 by a try that finds nothing
  if (::waitid(P_PIDFD, static_cast<id_t>(op.fd), op.waitid.info, op.waitid.options | WNOHANG) != 0)
    return -errno;
  return op.waitid.info->si_pid == 0 ? -EAGAIN : 0;
}

}  // namespace spindle::detail
