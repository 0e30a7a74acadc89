// The spindle runtime: how fibers run on a pool of workers.
//
// Protocol. Runtime::run validates the configuration, checks the kernel, and
// makes worker 0 on the calling thread. Worker 0 starts workers 1..n-1 one at
// a time; each creates its own ring (single-issuer: a ring belongs to the
// thread that made it) and reports back before the next starts. When all are
// up they are released together and the root fiber, pinned to worker 0,
// starts.
//
// A worker's turn: up to 64 fiber turns (resumed by the loop, or handed the
// thread directly by the fiber before them); then one ring service (submit
// every SQE staged during the turn and reap every CQE with a single
// io_uring_enter), expire sleep timers and operation deadlines, apply the
// mailbox. With nothing ready it takes a share of the global queue, then (as
// one of at most half the workers) steals half of another worker's run queue,
// then parks: with I/O in flight it blocks in io_uring_enter until a CQE, a
// deadline, or an eventfd write; with none it spins briefly (the adaptive
// spinner), then sleeps on a futex. Parker explains why a wake never gets lost
// and costs no syscall when the worker is awake; IdleSet explains why a push
// never misses a parked worker.
//
// A fiber parks (or yields, or exits) by switching away with a Suspend
// record: straight to the next fiber ready on its worker, or to the worker's
// loop when there is none or the batch of turns is used up. Whichever stack
// takes over, with the fiber's context saved, arms the fiber's park word and
// only then runs the record's publish step (unlock a wait queue, submit an
// SQE): a fiber is never findable by a waker before it is resumable. Every
// way a park can end (notify, timer, abort) races on one CAS of the park
// word; the winner queues the fiber, on the waking worker if it is a pool
// worker. I/O parks end only by their CQE: an abort or a deadline cancels the
// operation, and the fiber still waits for the CQE, so no call returns while
// the kernel may touch its buffer.
//
// Shutdown. When the root returns, its supervision node aborts every fiber
// (all descend from it) and the runtime closes to spawns. Workers keep
// running: aborted fibers see errc::aborted from their blocking calls and
// end; reads are cancelled, writes and syncs finish. Worker 0, which did the
// abort, knows the exact number of live fibers; at zero it lets every worker
// quit. No worker tears down its ring until all have left their loops. Then
// the pool threads, dedicated threads and the blocking pool are joined, and
// run() returns the root's value or rethrows the first failure.
//
// Rejected: one shared run queue (contention at two workers already); a
// thread per ring driving completions for all workers (a hop per op);
// IORING_OP_MSG_RING for wakes (needs the waker to own a ring: foreign
// threads do not); boost::context::fiber (its forced-unwind exceptions and
// per-switch record cost more than raw fcontext with our own switch).

#include "spindle/sched/runtime.hpp"

#include <csignal>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include "core/abandon.hpp"
#include "core/current.hpp"
#include "core/scheduler.hpp"
#include "core/worker.hpp"
#include "io/sim_driver.hpp"
#include "observe/stall_detector.hpp"
#include "runtime/io_choice.hpp"
#include "spindle/fiber/overflow.hpp"
#include "spindle/sched/context.hpp"
#include "time/coarse_clock.hpp"

namespace spindle {
namespace detail {
namespace {

// Async-signal-safe: called from the SIGSEGV handler on the faulting thread.
bool describe_overflow(const void* addr, char* out, std::size_t cap) {
  Worker* w = current_worker();
  Fiber* f = w ? w->current() : nullptr;
  if (!f || !f->stack) return false;
  const auto a = reinterpret_cast<std::uintptr_t>(addr);
  const auto limit = reinterpret_cast<std::uintptr_t>(f->stack.limit);
  const std::uintptr_t guard = 64 * 1024;  // the guard page, and a margin below it
  if (a >= limit || a + guard < limit) return false;
  // "fiber <id> '<name>'" without allocating.
  char digits[24];
  int nd = 0;
  std::uint64_t id = f->id;
  do {
    digits[nd++] = static_cast<char>('0' + id % 10);
    id /= 10;
  } while (id && nd < 24);
  std::size_t pos = 0;
  auto put = [&](char c) {
    if (pos + 1 < cap) out[pos++] = c;
  };
  for (const char* p = "fiber "; *p; ++p) put(*p);
  while (nd) put(digits[--nd]);
  put(' ');
  put('\'');
  for (char c : f->name) put(c);
  put('\'');
  out[pos] = '\0';
  return true;
}

// SIGPIPE from its default action (killing the process) to SIG_IGN, so that
// a write into a pipe or socket whose reader is gone fails with EPIPE. A
// disposition the program chose stays.
void ignore_broken_pipes() noexcept {
  struct sigaction sa{};
  if (::sigaction(SIGPIPE, nullptr, &sa) == 0 && sa.sa_handler == SIG_DFL &&
      (sa.sa_flags & SA_SIGINFO) == 0) {
    sa.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &sa, nullptr);
  }
}

void worker_thread(std::shared_ptr<Scheduler> s, std::size_t index) {
  std::optional<Worker> worker;
  try {
    worker.emplace(*s, Placement::kPool, index);
    s->workers[index] = &worker->remote();
    s->report_started(nullptr);
  } catch (...) {
    s->report_started(std::current_exception());
    return;
  }
  if (!s->wait_release()) return;  // another worker failed to start
  worker->run_pool();
  s->worker_done();
  s->wait_workers_done();
}

// The runtime_tasks_* record of a task launched from this thread, and the
// slot its spawn counts in. Null if interning failed (out of memory): the
// task then goes uncounted rather than unlaunched.
std::pair<TaskRecord*, std::size_t> record_for(Scheduler& s, Worker* w, std::string_view name,
                                               Placement execution, TaskKind kind) noexcept {
  try {
    if (w && &w->scheduler() == &s && w->placement() == Placement::kPool) {
      return {w->task_record(name, execution, kind), w->index()};
    }
    TaskRecord* r = s.metrics->intern(name, execution, kind);
    return {r, r->shared_slot};
  } catch (...) {
    return {nullptr, 0};
  }
}

// What a simulation refuses to run, if `s` is one and the spawn of a task
// with `placement` from worker `w` (null: a plain thread) is such: its error
// message. A simulation runs every fiber on its one thread, in the order its
// seed draws; a thread of any other kind would run beside it in real time.
const char* simulation_refusal(const Scheduler& s, const Worker* w, Placement placement) noexcept {
  if (!s.sim) return nullptr;
  if (placement == Placement::kBlocking)
    return "spindle::sim: spawn_blocking is refused in a simulation: its callable would run on a "
           "real thread, outside the simulation's schedule and virtual time";
  if (placement == Placement::kDedicated)
    return "spindle::sim: spawn_dedicated is refused in a simulation: its fiber would run on a "
           "thread of its own, outside the simulation's schedule";
  if (!w || &w->scheduler() != &s)
    return "spindle::sim: a spawn from a thread outside the simulation is refused (a plain "
           "thread runs outside the simulation's schedule and virtual time)";
  return nullptr;
}

// Ends `task`, which a simulation refused (`why`) to worker `w`'s spawn,
// unrun, and fails the run with std::logic_error(why). The abort of every
// fiber that a failure brings comes only from the simulation's own worker:
// from another thread, its wakes would be wakes the simulation refuses;
// there run() throws once the root returns.
template <class T>
void refuse(Scheduler& s, const Worker* w, T& task, std::size_t slot, const char* why) noexcept {
  abandon_unrun(task, slot);
  s.fail(std::make_exception_ptr(std::logic_error(why)), w && &w->scheduler() == &s);
}

}  // namespace

std::shared_ptr<Scheduler> make_scheduler(const Config& config) {
  const IoChoice io = choose_io_backend(config);
  return std::make_shared<Scheduler>(config, io.factory, io.name);
}

std::shared_ptr<Scheduler> make_sim_scheduler(const Config& config, Simulation& sim) {
  auto s = std::make_shared<Scheduler>(config, &make_sim_backend, "sim", &sim);
  s->list_fibers = &dump;
  return s;
}

const char* io_backend(const Scheduler& scheduler) noexcept { return scheduler.io_backend; }

Node& root_node(Scheduler& scheduler) noexcept { return *scheduler.root; }

Stopper& stopper(Scheduler& scheduler) noexcept { return *scheduler.stopper; }

bool accepting(const Scheduler& scheduler) noexcept { return scheduler.accepting(); }

void run_root(const std::shared_ptr<Scheduler>& s, Fiber* root, LiveScheduler* live) {
  root->root = true;
  root->name = "root";
  root->id = s->allocate_id_block(1);
  root->spawned_ms = coarse_now_ms();
  root->ref();  // the scheduler's: RuntimeHandles may reach the root node after run()
  s->root = root;
  s->workers.assign(s->config.workers, nullptr);
  s->count_spawn();  // not on a worker yet: counted as foreign
  root->record = record_for(*s, nullptr, root->name, Placement::kPool, TaskKind::kRoot).first;
  const std::size_t root_slot = root->record ? root->record->shared_slot : 0;
  count_task_spawn(root->record, root_slot);

  std::optional<Worker> w0;
  std::vector<std::thread> threads;
  auto abandon = [&](std::exception_ptr error) {
    s->release_workers(false);
    for (auto& t : threads) t.join();
    w0.reset();
    abandon_unrun(*root, root_slot);
    std::rethrow_exception(error);
  };
  try {
    static std::once_flag handler_once;
    std::call_once(handler_once, [] { fiber::install_overflow_handler(&describe_overflow); });
    ignore_broken_pipes();
    w0.emplace(*s, Placement::kPool, 0);
  } catch (...) {
    abandon(std::current_exception());
  }
  s->workers[0] = &w0->remote();
  for (std::size_t i = 1; i < s->config.workers; ++i) {
    threads.emplace_back(worker_thread, s, i);
    if (auto error = s->wait_started()) {
      threads.back().join();
      threads.pop_back();
      s->workers.resize(threads.size() + 1);
      abandon(error);
    }
  }
  s->release_workers(true);

  root->pinned = &w0->remote();
  w0->put(root);
  // Published once the root is set up: a dump from another thread reads it.
  if (live) live->store(s);
  {
    std::optional<StallDetector> watchdog;
    if (s->config.stall_threshold.count() > 0)
      watchdog.emplace(*s, s->config.stall_threshold, s->config.on_log);
    w0->run_pool();
  }

  s->worker_done();
  s->wait_workers_done();
  w0.reset();
  for (auto& t : threads) t.join();
  s->join_dedicated();
  s->blocking.close();
  // Never stopped, never will be: free plain threads still waiting on a signal.
  s->stopper->close();
  if (auto failure = s->failure()) std::rethrow_exception(failure);
}

void launch(Fiber* fiber, Node& parent, Placement placement, std::string_view name,
            const std::shared_ptr<const Identity>& identity) {
  Scheduler& s = fiber->scheduler();
  Worker* w = current_worker();
  fiber->id = (w && &w->scheduler() == &s) ? w->allocate_id() : s.allocate_id_block(1);
  fiber->spawned_ms = w ? w->batch_ms() : coarse_now_ms();
  if (identity) {
    fiber->identity = identity;
    if (name.empty()) name = identity->label;
  }
  if (!name.empty()) fiber->name = name;
  const auto [record, slot] = record_for(s, w, name, placement, TaskKind::kTask);
  fiber->record = record;
  // Counted even if refused below, and then finished at once (as the
  // reference does): runtime_tasks_spawned_total counts attempts.
  count_task_spawn(record, slot);
  // Counted before adoption: a spawn that gets past adopt() is visible to the
  // shutdown count through the supervision lock.
  s.count_spawn();
  if (const char* why = simulation_refusal(s, w, placement)) [[unlikely]] {
    refuse(s, w, *fiber, slot, why);
    return;
  }
  if (!s.accepting() || !parent.adopt(fiber)) {
    abandon_unrun(*fiber, slot);
    return;
  }
  if (placement == Placement::kDedicated) {
    s.start_dedicated(fiber);
  } else {
    s.put_spawned(fiber);
  }
}

void launch_blocking(Scheduler& s, BlockingTask* task, Node& parent, const Identity* identity) {
  Worker* w = current_worker();
  const auto [record, slot] =
      record_for(s, w, identity ? identity->label : "", Placement::kBlocking, TaskKind::kTask);
  task->record = record;
  count_task_spawn(record, slot);
  if (const char* why = simulation_refusal(s, w, Placement::kBlocking)) {
    refuse(s, w, *task, slot, why);
    return;
  }
  if (!s.accepting() || !parent.adopt(task) || !s.blocking.submit(task)) {
    abandon_unrun(*task, slot);
  }
}

}  // namespace detail

RuntimeHandle current_runtime() {
  detail::Scheduler* s = detail::current_scheduler();
  if (!s) throw std::logic_error("spindle::current_runtime() called outside a runtime's thread");
  return RuntimeHandle(s->shared_from_this());
}

const Config& current_config() {
  detail::Scheduler* s = detail::current_scheduler();
  if (!s) throw std::logic_error("spindle::current_config() called outside a runtime's thread");
  return s->config;
}

namespace detail {
Fiber& current_spawner() {
  Fiber* f = current_fiber();
  if (!f) throw std::logic_error("spindle::spawn() called outside a fiber");
  return *f;
}
}  // namespace detail

Context this_fiber::context() {
  detail::Fiber* f = detail::current_fiber();
  if (!f) throw std::logic_error("spindle::this_fiber::context() called outside a fiber");
  return Context(f->scheduler(), *f, f->identity);
}

Runtime::Runtime(Config config) : config_(config) { config_.validate(); }

}  // namespace spindle
