// The runtime entry points that spindle's header templates call. Internal.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "spindle/base/guarded_cell.hpp"
#include "spindle/sched/config.hpp"
#include "spindle/sched/detail/fiber.hpp"

namespace spindle::detail {

class Scheduler;
class Simulation;
class Stopper;
class Task;

// Where a task runs: the one vocabulary of spawns, workers and the
// `execution` label of runtime_tasks_* ("shared", "dedicated", "blocking").
enum class Placement : std::uint8_t {
  kPool,       // an ordinary fiber on the worker pool
  kDedicated,  // the root of a new thread with its own ring
  kBlocking,   // a spawn_blocking callable on the blocking pool (no fiber, no worker)
};

// The fiber running on this thread, or null (not a worker, or between fibers).
// Never inlined: a fiber may resume on another thread after any suspension, so
// no caller may keep a thread-local address across one.
Fiber* current_fiber() noexcept;
// The scheduler of the fiber or worker on this thread, or null.
Scheduler* current_scheduler() noexcept;
// The deadline scope (this_fiber::with_deadline) of the calling fiber, or of
// the calling plain thread outside a fiber: kNoDeadline outside any scope.
// The reference stays the caller's across suspensions (a fiber's own field).
Deadline& scope_deadline() noexcept;
// The deadline a wait that may be cut short, with its own `deadline`, waits
// until: the earlier of that and the caller's deadline scope; `from_scope`
// says whether the scope's is the earlier.
Deadline effective_deadline(Deadline deadline, bool& from_scope) noexcept;

// Creates the scheduler for one Runtime::run (no threads or rings yet).
std::shared_ptr<Scheduler> make_scheduler(const Config& config);
// Creates the scheduler for one run of simulation `sim` (spindle::sim): one
// worker, the simulated I/O backend, fibers picked and time kept by `sim`.
// `config` must have workers = 1, the idle spinner and stall detector off.
std::shared_ptr<Scheduler> make_sim_scheduler(const Config& config, Simulation& sim);
// Runtime's view of its running scheduler, for calls from other threads
// while run() runs (empty otherwise). Copying a Runtime does not copy it.
using LiveScheduler = GuardedCell<std::weak_ptr<Scheduler>>;
// Runs `root` as worker 0's root fiber until it ends and shutdown completes;
// `live` (if set) is given the scheduler once the root's node exists.
// Rethrows the first failure (see Config::catch_exceptions) after shutdown.
void run_root(const std::shared_ptr<Scheduler>& scheduler, Fiber* root, LiveScheduler* live);
// The supervision parent of spawns from foreign threads.
Node& root_node(Scheduler& scheduler) noexcept;
// The runtime's stop state (Context::stop and stopped).
Stopper& stopper(Scheduler& scheduler) noexcept;
bool accepting(const Scheduler& scheduler) noexcept;
// RuntimeHandle::dump().
std::string dump(Scheduler& scheduler);
// "io_uring" or "epoll".
const char* io_backend(const Scheduler& scheduler) noexcept;

// Admits a new fiber under `parent` and queues it. If the runtime is shutting
// down or `parent` is aborted, the fiber completes as aborted and its body
// never runs. Takes over the creation reference of `fiber`.
// Unnamed, it takes the label path of `identity` (may be null) as its name; it
// carries `identity` for this_fiber::context().
void launch(Fiber* fiber, Node& parent, Placement placement, std::string_view name,
            const std::shared_ptr<const Identity>& identity);

// A plain callable run on the blocking pool.
class BlockingTask : public Task {
 public:
  virtual void run() = 0;
  virtual void discard() noexcept = 0;

  TaskRecord* record = nullptr;  // its runtime_tasks_* series (metrics.hpp)

 protected:
  void destroy() noexcept override { delete this; }
};

template <class F, class T>
class BlockingTaskImpl final : public BlockingTask, public ResultCell<T> {
 public:
  template <class G>
  explicit BlockingTaskImpl(G&& fn) : fn_(std::forward<G>(fn)) {}
  void run() override { run_body_into(fn_, static_cast<ResultCell<T>&>(*this)); }
  void discard() noexcept override { fn_.reset(); }

 private:
  std::optional<F> fn_;
};

// Queues `task` on the blocking pool under `parent` (same rules as launch();
// its runtime_tasks_* name is the label path of `identity`).
void launch_blocking(Scheduler& scheduler, BlockingTask* task, Node& parent,
                     const Identity* identity);

}  // namespace spindle::detail
