#include "core/current.hpp"

#include "core/worker.hpp"

namespace spindle::detail {
namespace {

thread_local Worker* t_worker = nullptr;

}  // namespace

[[gnu::noinline]] Worker* current_worker() noexcept { return t_worker; }

[[gnu::noinline]] Worker* current_pool_worker(const Scheduler& scheduler) noexcept {
  Worker* w = t_worker;
  return w && &w->scheduler() == &scheduler && w->placement() == Placement::kPool ? w : nullptr;
}

void set_current_worker(Worker* w) noexcept { t_worker = w; }

[[gnu::noinline]] Fiber* current_fiber() noexcept {
  Worker* w = t_worker;
  return w ? w->current() : nullptr;
}

[[gnu::noinline]] Scheduler* current_scheduler() noexcept {
  Worker* w = t_worker;
  return w ? &w->scheduler() : nullptr;
}

Deadline& scope_deadline() noexcept {
  thread_local Deadline t_scope = kNoDeadline;  // a plain thread's
  Fiber* f = current_fiber();
  return f != nullptr ? f->scope_deadline : t_scope;
}

Deadline effective_deadline(Deadline deadline, bool& from_scope) noexcept {
  const Deadline scope = scope_deadline();
  from_scope = scope < deadline;
  return from_scope ? scope : deadline;
}

}  // namespace spindle::detail
