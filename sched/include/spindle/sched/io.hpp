// io_op: the blocking-operation primitive. net/ and storage/ build every call
// on it: one SQE on the calling worker's ring, the fiber parked until its CQE.
// Any number of fibers may call io_op at once, each for its own operation; the
// operation stays on the ring of the worker that issued it, while the fiber
// may resume on another worker.
#pragma once

#include <type_traits>
#include <utility>

#include "spindle/base/result.hpp"
#include "spindle/base/time.hpp"

struct io_uring_sqe;

namespace spindle {

struct IoOptions {
  // When it passes, the operation is cancelled (IORING_OP_ASYNC_CANCEL) and
  // the call returns errc::timed_out once the CQE arrives, unless the
  // operation completed first. Operation deadlines have the granularity of
  // Config::timeout_wheel_tick: the cancel comes at the first tick at or
  // after the deadline, never before it.
  Deadline deadline = kNoDeadline;
  // false for writes and syncs: never cancelled, not by abort and not at
  // shutdown; they always run to completion. Such an operation takes no
  // deadline.
  bool cancellable = true;
};

namespace detail {
using IoPrepareFn = void (*)(void* ctx, io_uring_sqe* sqe) noexcept;
Result<int> run_io(IoPrepareFn prepare, void* ctx, const IoOptions& options);
}  // namespace detail

// Prepares one SQE with `prepare(io_uring_sqe*)` (again if the kernel answers
// EINTR, or EAGAIN after a yield) and parks the fiber until its CQE. Use
// blocking fds: io_uring waits for readiness itself, but honours O_NONBLOCK
// with EAGAIN. Returns the CQE's result (>= 0), or: the errno in
// std::system_category; errc::timed_out; errc::aborted if the fiber is aborted
// (at once if it already was; a cancellable operation in flight is cancelled
// first); errc::io_limit, at once, if the worker already has
// Config::max_io_in_flight operations in flight. Never returns while the
// kernel may still use the buffers `prepare` handed it. Fiber-only.
// Suspends: until the operation's CQE arrives.
template <class Prepare>
Result<int> io_op(Prepare&& prepare, const IoOptions& options = {}) {
  using P = std::remove_reference_t<Prepare>;
  static_assert(std::is_nothrow_invocable_v<P&, io_uring_sqe*>,
                "the prepare callable must be noexcept(io_uring_sqe*)");
  return detail::run_io([](void* ctx, io_uring_sqe* sqe) noexcept { (*static_cast<P*>(ctx))(sqe); },
                        const_cast<std::remove_const_t<P>*>(&prepare), options);
}

}  // namespace spindle
