// Scheduler: the state one Runtime::run shares across its workers: the
// global queue, the idle set, the stack pool, shutdown and failure state.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "core/blocking_pool.hpp"
#include "core/global_queue.hpp"
#include "core/io_backend.hpp"
#include "core/metrics.hpp"
#include "core/roster.hpp"
#include "core/stopper.hpp"
#include "park/idle_set.hpp"
#include "spindle/base/thread_mutex.hpp"
#include "spindle/fiber/stack.hpp"
#include "spindle/sched/config.hpp"
#include "spindle/sched/detail/fiber.hpp"
#include "spindle/sched/detail/simulation.hpp"

namespace spindle::detail {

class WorkerRemote;

// what() of the exception, for logs.
std::string describe_exception(const std::exception_ptr& e);

class Scheduler;

// Every live scheduler, newest first, linked through debug_next: the roots
// from which a debugger finds fibers (scripts/gdb/spindle.py).
extern ThreadMutex debug_schedulers_mutex;
extern Scheduler* debug_schedulers SPINDLE_GUARDED_BY(debug_schedulers_mutex);

// Thread-safe unless noted.
class Scheduler : public std::enable_shared_from_this<Scheduler> {
 public:
  // `io` makes each worker's I/O backend, `io_name` ("io_uring", "epoll",
  // "sim") says which. `sim`: the simulation this scheduler runs (its one
  // worker picks fibers and keeps time by it), or null.
  Scheduler(const Config& config, IoBackendFactory io, const char* io_name,
            Simulation* sim = nullptr);
  ~Scheduler();

  const Config config;
  const IoBackendFactory io_factory;
  const char* const io_backend;
  Simulation* const sim;
  // A simulation's listing of its fibers (RuntimeHandle::dump), for the
  // error of a deadlock: set before the run starts; null otherwise.
  std::string (*list_fibers)(Scheduler&) = nullptr;
  fiber::StackPool stack_pool;
  GlobalQueue global;
  IdleSet idle;
  // Runtime and user metrics. Before `blocking`: the pool's last completions
  // count into it. A shared_ptr: the Runtime keeps the final values.
  const std::shared_ptr<Metrics> metrics;
  BlockingPool blocking;
  Roster roster;
  std::mutex dump_mutex;  // one dump at a time
  // Context::stop / stopped. A shared_ptr: StopSignals may outlive the run.
  const std::shared_ptr<Stopper> stopper = std::make_shared<Stopper>();

  // Operations refused with errc::io_limit since the last log of them, and
  // when that log was written (coarse_now_ms; 0: never). relaxed: a count and
  // a rate limit, ordered by nothing else.
  struct {
    std::atomic<std::uint64_t> refused{0};
    std::atomic<std::uint64_t> reported_ms{0};
  } io_limit_refusals;

  // Link in debug_schedulers.
  Scheduler* debug_next SPINDLE_GUARDED_BY(debug_schedulers_mutex) = nullptr;

  // Pool workers by index; filled during startup, stable until teardown.
  std::vector<WorkerRemote*> workers;
  Fiber* root = nullptr;

  // Makes a fiber whose park just ended runnable: on its pinned worker if it
  // has one (by message from another thread), else on the calling pool worker
  // (Worker::put_woken, which may give it the next-fiber slot), else through
  // the global queue.
  void put_woken(Fiber* f) noexcept;
  // Makes a fiber just spawned (not pinned, not started) runnable, through a
  // spawn entry (ready_entry.hpp) so that a joiner may start it first: on the
  // calling pool worker if there is one, else through the global queue.
  void put_spawned(Fiber* f) noexcept;
  // A push left stealable work: wake a parked worker to search, unless a
  // searcher already covers it.
  void notify_parked() noexcept;
  void unpark_all() noexcept;

  // False once shutdown begins: spawns are refused.
  bool accepting() const noexcept { return !closing_.load(std::memory_order_acquire); }
  bool closing() const noexcept { return closing_.load(std::memory_order_acquire); }
  void begin_shutdown() noexcept;
  // Worker 0, once closing and no fiber is left: lets every worker quit.
  void complete_shutdown() noexcept;
  bool shutdown_complete() const noexcept { return done_.load(std::memory_order_acquire); }
  // Fibers spawned and not yet finished. Exact for worker 0 after it aborted
  // the tree (every spawn since then is refused, and every counted exit has
  // its spawn counted); other threads may see a stale value.
  std::int64_t live_fibers() const noexcept;
  void count_spawn() noexcept;
  void count_finish() noexcept;

  std::uint64_t allocate_id_block(std::uint64_t n) noexcept {
    return next_id_.fetch_add(n, std::memory_order_relaxed);
  }

  // A task, described by `who` ("fiber 7 'name'", "blocking task"), ended by
  // exception. Under catch_exceptions = false the first such exception is
  // the runtime's failure and aborts the root; every other is logged
  // (kError). The one place a task's exception is reported.
  void task_failed(std::string_view who, std::exception_ptr error) noexcept;
  // Makes `error` the runtime's failure, whatever Config::catch_exceptions
  // says, and aborts the root if `abort`, unless the runtime failed already;
  // whether it did so.
  bool fail(std::exception_ptr error, bool abort = true) noexcept;
  std::exception_ptr failure() const;

  // Dedicated threads: started by launch(), joined at the end of run_root().
  void start_dedicated(Fiber* fiber);
  void join_dedicated();

 private:
  // Takes the dedicated threads that finished out of dedicated_, for the
  // caller to join once it has released mutex_.
  std::vector<std::thread> reap_dedicated() SPINDLE_REQUIRES(mutex_);
  // Counts one spawn or exit in this worker's `mine` (a pool worker of this
  // scheduler) with `order`, else in `foreign`.
  void count_live(std::atomic<std::uint64_t> WorkerRemote::* mine,
                  std::atomic<std::uint64_t>& foreign, std::memory_order order) noexcept;

 public:
  // Startup rendezvous: worker 0 starts the others one at a time, each
  // reporting whether its I/O backend came up, then releases them all at once (or,
  // if one failed, tells the started ones to quit).
  void report_started(std::exception_ptr error);
  std::exception_ptr wait_started();
  void release_workers(bool go);
  bool wait_release();
  // Teardown barrier: no pool worker destroys its I/O backend until all have left
  // their loops, since a late unpark may still reach any of them.
  void worker_done();
  void wait_workers_done();

 private:
  std::atomic<bool> closing_{false};
  std::atomic<bool> done_{false};
  std::atomic<std::uint64_t> foreign_spawned_{0};   // spawns off the pool workers
  std::atomic<std::uint64_t> foreign_finished_{0};  // exits off the pool workers
  std::atomic<std::uint64_t> next_id_{1};

  mutable ThreadMutex mutex_;
  std::condition_variable cv_;
  std::exception_ptr failure_ SPINDLE_GUARDED_BY(mutex_);
  std::vector<std::thread> dedicated_ SPINDLE_GUARDED_BY(mutex_);
  // Threads to join.
  std::vector<std::thread::id> dedicated_finished_ SPINDLE_GUARDED_BY(mutex_);
  bool started_ready_ SPINDLE_GUARDED_BY(mutex_) = false;
  std::exception_ptr started_error_ SPINDLE_GUARDED_BY(mutex_);
  bool released_ SPINDLE_GUARDED_BY(mutex_) = false;
  bool go_ SPINDLE_GUARDED_BY(mutex_) = false;
  std::size_t workers_done_ SPINDLE_GUARDED_BY(mutex_) = 0;
};

}  // namespace spindle::detail
