#include "spindle/sched/this_fiber.hpp"

#include <thread>

#include "core/current.hpp"
#include "core/worker.hpp"
#include "spindle/sched/detail/core.hpp"
#include "spindle/sched/io.hpp"

namespace spindle::this_fiber {

Result<void> yield() {
  detail::Fiber* f = detail::current_fiber();
  if (!f) {
    std::this_thread::yield();
    return {};
  }
  if (f->aborted()) return failure(errc::aborted);
  detail::Suspend s;
  s.kind = detail::Suspend::Kind::kYield;
  detail::Worker::suspend(f, s);
  return {};
}

Result<void> yield_to_io() {
  if (!detail::current_fiber()) {
    std::this_thread::yield();
    return {};
  }
  // The nop completes at the worker's next I/O service, with every other
  // completion ready then; the yield then lets the fibers woken by them go
  // first.
  if (auto r = io::nop(); !r) return failure(r.error());
  return yield();
}

void expect_completions(std::size_t count, Deadline deadline) noexcept {
  detail::Fiber* f = detail::current_fiber();
  if (!f || count <= 1 || deadline <= Clock::now()) return;
  detail::current_worker()->expect_completions(f, count, deadline);
}

Result<void> sleep_until(Deadline deadline) {
  bool from_scope = false;
  deadline = detail::effective_deadline(deadline, from_scope);
  // The end of a sleep cut short by the deadline scope.
  const auto end = [from_scope]() -> Result<void> {
    if (from_scope) return failure(errc::timed_out);
    return {};
  };
  detail::Fiber* f = detail::current_fiber();
  if (!f) {
    std::this_thread::sleep_until(deadline);
    return end();
  }
  if (f->aborted()) return failure(errc::aborted);
  if (deadline <= Clock::now()) return end();
  ++f->epoch;
  f->waiting_on = "sleep";
  detail::Suspend s;
  s.kind = detail::Suspend::Kind::kPark;
  s.park = detail::ParkKind::kInterruptible;
  s.deadline = deadline;
  detail::Worker::suspend(f, s);
  if (f->wake_reason == detail::WakeReason::kAborted) return failure(errc::aborted);
  return end();
}

Result<void> sleep_for(std::chrono::nanoseconds d) {
  if (d <= std::chrono::nanoseconds::zero()) {
    if (aborted()) return failure(errc::aborted);
    return {};
  }
  constexpr auto kMax = std::chrono::hours(24 * 365 * 30);
  return sleep_until(Clock::now() + std::min<std::chrono::nanoseconds>(d, kMax));
}

Deadline deadline() noexcept { return detail::scope_deadline(); }

std::uint64_t id() noexcept {
  detail::Fiber* f = detail::current_fiber();
  return f ? f->id : 0;
}

bool aborted() noexcept {
  detail::Fiber* f = detail::current_fiber();
  return f && f->aborted();
}

}  // namespace spindle::this_fiber

namespace spindle::detail {

DeadlineScope::DeadlineScope(Deadline deadline) noexcept : slot_(scope_deadline()), outer_(slot_) {
  slot_ = std::min(outer_, deadline);
}

DeadlineScope::~DeadlineScope() { slot_ = outer_; }

}  // namespace spindle::detail
