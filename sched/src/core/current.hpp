// The runtime's thread-local accessors (current_fiber and current_scheduler
// are in spindle/sched/detail/core.hpp, for the public headers). Never
// inlined: a fiber may resume on another thread after any suspension, so no
// caller may keep a thread-local address across one.
#pragma once

namespace spindle::detail {

class Scheduler;
class Worker;

// The worker on this thread, or null.
Worker* current_worker() noexcept;
// The worker on this thread if it is a pool worker of `scheduler`, or null.
Worker* current_pool_worker(const Scheduler& scheduler) noexcept;
// Makes `w` (or null) this thread's worker. Called by Worker's constructor
// and destructor only.
void set_current_worker(Worker* w) noexcept;

}  // namespace spindle::detail
