// abandon_unrun: the one way a fiber or blocking task that will never run
// ends (refused at launch, dropped at shutdown, its thread failed to start).
#pragma once

#include <cstddef>
#include <type_traits>

#include "core/metrics.hpp"
#include "core/scheduler.hpp"
#include "spindle/sched/detail/core.hpp"
#include "spindle/sched/detail/fiber.hpp"

namespace spindle::detail {

// Ends `task` (a Fiber or a BlockingTask), whose body never ran, as aborted:
// destroys its closure, closes its node to spawns (the cascade), unlinks it
// from its parent, counts it finished in its runtime_tasks_* series (at
// `slot`, the slot its spawn counted in), publishes the outcome to its
// joiners, and drops the caller's reference. A fiber is also counted
// finished in its scheduler's live count, where its spawn was counted
// (Scheduler::count_spawn). Any thread.
template <class T>
void abandon_unrun(T& task, std::size_t slot) noexcept {
  task.discard();
  task.abort_tree();
  task.detach();
  if (TaskRecord* r = task.record) count_task_finish(r, slot);
  task.complete(Task::Outcome::kAborted, nullptr);
  if constexpr (std::is_base_of_v<Fiber, T>) task.scheduler().count_finish();
  task.unref();
}

}  // namespace spindle::detail
