#include "spindle/sched/io.hpp"

#include <fmt/format.h>
#include <liburing.h>

#include <atomic>
#include <cerrno>
#include <cstdint>

#include "core/current.hpp"
#include "core/io_request.hpp"
#include "core/park_word.hpp"
#include "core/scheduler.hpp"
#include "core/worker.hpp"
#include "spindle/base/assert.hpp"
#include "spindle/sched/this_fiber.hpp"
#include "time/coarse_clock.hpp"

namespace spindle::detail {
namespace {

void prepare_thunk(uring::Operation* op, io_uring_sqe* sqe) noexcept {
  auto* r = static_cast<IoRequest*>(op);
  r->prepare_fn(r->prepare_ctx, sqe);
  r->opcode = sqe->opcode;
}

// On the owning worker, when the op's CQE (and any cancel's CQE) arrived: the
// op's only waker.
void complete_thunk(uring::Operation* op, int res, std::uint32_t flags) noexcept {
  auto* r = static_cast<IoRequest*>(op);
  r->result = res;
  r->cqe_flags = flags;
  if (r->deadline_entry.linked()) current_worker()->wheel().remove(&r->deadline_entry);
  Fiber* f = r->fiber;
  f->wake_reason = WakeReason::kNotified;
  end_io_park(*f);
  f->scheduler().put_woken(f);
}

// After the fiber's context is saved and its park word armed (kIo).
void publish_io(void* arg) noexcept {
  auto* r = static_cast<IoRequest*>(arg);
  Worker* w = current_worker();
  w->ring().submit(r);
  if (r->deadline != kNoDeadline) w->wheel().insert(&r->deadline_entry, r->deadline);
  // The mirror of Fiber::on_abort: the abort flag is read after the arm.
  if (r->cancellable && r->fiber->aborted()) {
    r->aborted = true;
    w->ring().cancel(r);
  }
}

// Counts an operation refused because worker `w` has `limit` in flight, and
// logs it at most once a second per runtime. Any worker.
void refuse_over_limit(const Worker& w, std::size_t limit) noexcept {
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

}  // namespace

IoRequest::IoRequest(PrepareFn fn, void* ctx, bool c) noexcept
    : uring::Operation(&prepare_thunk, &complete_thunk),
      prepare_fn(fn),
      prepare_ctx(ctx),
      cancellable(c) {
  deadline_entry.request = this;
}

void on_io_deadline(WheelEntry* entry) noexcept {
  IoRequest* r = static_cast<IoDeadline*>(entry)->request;
  if (r->aborted) return;
  r->timed_out = true;
  current_worker()->ring().cancel(r);
}

void cancel_io(Worker& owner, Fiber* fiber, std::uint64_t epoch) noexcept {
  if (!confirm_io_abort(*fiber, epoch)) return;  // that park ended
  if (fiber->io_owner.load(std::memory_order_relaxed) != &owner.remote()) return;
  auto* r = static_cast<IoRequest*>(fiber->io_op);
  if (!r->cancellable || r->aborted || r->timed_out) return;
  r->aborted = true;
  owner.ring().cancel(r);
}

Result<int> run_io(IoPrepareFn prepare, void* ctx, const IoOptions& options) {
  Fiber* f = current_fiber();
  SPINDLE_ASSERT(f != nullptr, "spindle::io_op called outside a fiber");
  SPINDLE_ASSERT(options.cancellable || options.deadline == kNoDeadline,
                 "a non-cancellable operation takes no deadline");
  for (;;) {
    if (options.cancellable && f->aborted()) return failure(errc::aborted);
    if (options.deadline != kNoDeadline && !surely_ahead(options.deadline) &&
        options.deadline <= Clock::now()) {
      return failure(errc::timed_out);
    }
    // The operation goes to the ring of the worker this fiber parks on: this one.
    Worker* w = current_worker();
    if (const std::size_t limit = f->scheduler().config.max_io_in_flight;
        w->ring().in_flight() >= limit) {
      refuse_over_limit(*w, limit);
      return failure(errc::io_limit);
    }
    IoRequest r(prepare, ctx, options.cancellable);
    r.fiber = f;
    r.epoch = ++f->epoch;
    r.deadline = options.deadline;
    f->io_op = &r;
    f->waiting_on = "io";
    Suspend s;
    s.kind = Suspend::Kind::kPark;
    s.park = ParkKind::kIo;
    s.publish = &publish_io;
    s.arg = &r;
    Worker::suspend(f, s);
    f->io_op = nullptr;
    const int res = r.result;
    if (res >= 0) return res;  // a completion that raced its cancel wins
    if (r.aborted && (res == -ECANCELED || res == -EINTR)) return failure(errc::aborted);
    if (r.timed_out && (res == -ECANCELED || res == -EINTR)) return failure(errc::timed_out);
    if (res == -EINTR) continue;
    if (res == -EAGAIN) {
      // A non-blocking fd (io_uring honours O_NONBLOCK) or a transient
      // shortage: let other fibers run, then try again.
      if (auto y = this_fiber::yield(); !y) return failure(y.error());
      continue;
    }
    return errno_failure(-res);
  }
}

}  // namespace spindle::detail
