// run_io: an IoOp on the calling worker's backend, with the contract of
// spindle/sched/io.hpp (whose calls build the IoOp), and io_op's run_sqe.

#include <fmt/format.h>

#include <cerrno>

#include "core/current.hpp"
#include "core/metrics.hpp"
#include "core/scheduler.hpp"
#include "core/worker.hpp"
#include "io/driver.hpp"
#include "io/uring_driver.hpp"
#include "spindle/base/assert.hpp"
#include "spindle/sched/io.hpp"
#include "spindle/sched/this_fiber.hpp"
#include "time/coarse_clock.hpp"

namespace spindle::detail {
namespace {

// EINTR or EAGAIN: run_io tries again.
bool again(const std::error_code& e) noexcept {
  return e.category() == std::system_category() && (e.value() == EINTR || e.value() == EAGAIN);
}

// run_io after a try whose result `r` said EINTR or EAGAIN: again, after a
// yield for EAGAIN (a non-blocking fd, which io_uring answers so, or a
// transient shortage), until a try says something else, left in `r`.
[[gnu::noinline]] void run_again(Fiber* f, const IoOp& op, const IoOptions& options,
                                 Result<int>& r) {
  do {
    if (r.error().value() == EAGAIN) {
      if (auto y = this_fiber::yield(); !y) {
        r = failure(y.error());
        return;
      }
    }
    r = current_driver().perform(f, op, options);
  } while (!r && again(r.error()));
}

// run_io with the calling fiber's deadline scope, earlier than the
// operation's own deadline, in its place. Out of line: the copy of the
// options stays off run_io's frame.
[[gnu::noinline]] Result<int> run_scoped(const IoOp& op, const IoOptions& options, Deadline scope) {
  IoOptions scoped = options;
  scoped.deadline = scope;
  return run_io(op, scoped);
}

}  // namespace

void refuse_over_limit(std::size_t limit) noexcept {
  const Worker& w = *current_worker();
  count(Stat::kIoLimitRefusals);
  auto& [refused, reported_ms] = w.scheduler().io_limit_refusals;
  refused.fetch_add(1, std::memory_order_relaxed);
  const std::uint64_t now = coarse_now_ms();
  std::uint64_t last = reported_ms.load(std::memory_order_relaxed);
  if ((last != 0 && now - last < 1000) ||
      !reported_ms.compare_exchange_strong(last, now, std::memory_order_relaxed)) {
    return;
  }
  const std::uint64_t n = refused.exchange(0, std::memory_order_relaxed);
  write_log(w.scheduler().config.on_log, LogLevel::kWarning,
            fmt::format("worker {} has {} I/O operations in flight, as many as "
                        "Config::max_io_in_flight allows; refused {} operation{} with "
                        "errc::io_limit",
                        w.index(), limit, n, n == 1 ? "" : "s"));
}

Result<int> run_io(const IoOp& op, const IoOptions& options) {
  // One thread-local read: the worker the fiber runs (and will park) on.
  Worker* w = current_worker();
  SPINDLE_ASSERT(w != nullptr && w->current() != nullptr, "spindle I/O called outside a fiber");
  SPINDLE_ASSERT(options.cancellable || (options.deadline == kNoDeadline &&
                                         options.timeout == std::chrono::nanoseconds::max()),
                 "a non-cancellable operation takes no deadline and no timeout");
  Fiber* f = w->current();
  const bool scoped = f->scope_deadline < options.deadline && options.cancellable;
  // Every path ends in `r`, which is the return value itself. io_uring's
  // perform() is inlined here: the common call skips a virtual dispatch and
  // a frame.
  IoDriver& d = driver_of(*w);
  Result<int> r = scoped      ? run_scoped(op, options, f->scope_deadline)
                  : d.uring() ? static_cast<UringDriver&>(d).run(*w, f, op, options)
                              : d.perform(f, op, options);
  if (!r && again(r.error())) [[unlikely]]
    run_again(f, op, options, r);
  return r;
}

Result<int> run_sqe(IoPrepareFn prepare, void* ctx, const IoOptions& options) {
  if (current_fiber() && !current_driver().supports(IoCode::kSqe)) {
    return failure(errc::unsupported);
  }
  IoOp op(IoCode::kSqe, -1);
  op.sqe = {prepare, ctx};
  return run_io(op, options);
}

}  // namespace spindle::detail
