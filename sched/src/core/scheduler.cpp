#include "core/scheduler.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/abandon.hpp"
#include "core/current.hpp"
#include "core/ready_entry.hpp"
#include "core/unpark.hpp"
#include "core/worker.hpp"
#include "park/fence.hpp"
#include "spindle/base/assert.hpp"

namespace spindle::detail {
std::string describe_exception(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    return ex.what();
  } catch (...) {
    return "unknown exception";
  }
}

ThreadMutex debug_schedulers_mutex;
Scheduler* debug_schedulers = nullptr;

Scheduler::Scheduler(const Config& c, IoBackendFactory io, const char* io_name,
                     Simulation* simulation)
    : config(c),
      io_factory(io),
      io_backend(io_name),
      sim(simulation),
      stack_pool(c.stack_size),
      idle(c.workers),
      metrics(std::make_shared<Metrics>(c.workers, io_name)),
      blocking(c.blocking_threads,
               [this](BlockingTask* t) { task_failed("blocking task", t->exception()); }) {
  metrics->attach_global_queue(&global);
  ThreadLock lock(debug_schedulers_mutex);
  debug_next = debug_schedulers;
  debug_schedulers = this;
}

Scheduler::~Scheduler() {
  {
    ThreadLock lock(debug_schedulers_mutex);
    Scheduler** link = &debug_schedulers;
    while (*link != this) link = &(*link)->debug_next;
    *link = debug_next;
  }
  SPINDLE_ASSERT(stack_pool.in_use() == 0, "a fiber stack outlived its runtime");
  // Only spawn entries whose fibers a joiner ran can be left in the queue.
  ReadyEntry* e = nullptr;
  while (global.take(&e, 1) == 1) {
    const bool stale = is_spawn_entry(e) && claim_entry(e) == nullptr;
    SPINDLE_ASSERT(stale, "a ready fiber outlived its runtime");
  }
  metrics->attach_global_queue(nullptr);
  if (root) root->unref();
}

namespace {

// A wake from a thread that runs no worker of the scheduler of `sim`: a
// simulation runs every fiber on its one thread, and such a wake would come
// at a time no seed decides.
void check_foreign_wake(const Simulation* sim) noexcept {
  SPINDLE_ASSERT(sim == nullptr,
                 "spindle::sim: a thread outside the simulation woke one of its fibers (plain "
                 "threads cannot take part in a simulation)");
}

}  // namespace

void Scheduler::put_woken(Fiber* f) noexcept {
  Worker* w = current_worker();
  if (WorkerRemote* pinned = f->pinned) {
    if (w && pinned == &w->remote()) {
      w->put(f);
    } else {
      check_foreign_wake(sim);
      pinned->send({MailMessage::Kind::kResume, f, 0});
    }
    return;
  }
  if (w && w->placement() == Placement::kPool && &w->scheduler() == this) {
    w->put_woken(f);
    return;
  }
  check_foreign_wake(sim);
  global.push(ready_entry(f));
  notify_parked();
}

void Scheduler::put_spawned(Fiber* f) noexcept {
  SPINDLE_DCHECK(!f->pinned && !f->started);
  // relaxed: published by the queue push below.
  f->claimable.store(true, std::memory_order_relaxed);
  if (Worker* w = current_pool_worker(*this)) {
    w->put_new(spawn_entry(f));
    return;
  }
  global.push(spawn_entry(f));
  notify_parked();
}

void Scheduler::notify_parked() noexcept {
  // seq_cst fence between the caller's push and the idle-set load: pairs with
  // the fence in Worker::park between setting the idle bit and looking.
  full_fence();
  if (idle.searching() != 0) return;  // a searcher will find it, or re-check before parking
  const int i = idle.claim_one();
  if (i >= 0) unpark_after_locks(workers[static_cast<std::size_t>(i)]);
}

void Scheduler::unpark_all() noexcept {
  for (WorkerRemote* w : workers) w->unpark();
}

void Scheduler::begin_shutdown() noexcept {
  closing_.store(true, std::memory_order_seq_cst);
  unpark_all();
}

void Scheduler::complete_shutdown() noexcept {
  done_.store(true, std::memory_order_release);
  unpark_all();
}

void Scheduler::count_live(std::atomic<std::uint64_t> WorkerRemote::* mine,
                           std::atomic<std::uint64_t>& foreign, std::memory_order order) noexcept {
  if (Worker* w = current_pool_worker(*this)) {
    // Written only by its worker: a load and a store.
    std::atomic<std::uint64_t>& c = w->remote().*mine;
    c.store(c.load(std::memory_order_relaxed) + 1, order);
  } else {
    foreign.fetch_add(1, std::memory_order_seq_cst);
  }
}

void Scheduler::count_spawn() noexcept {
  // relaxed: made visible to worker 0's shutdown count by the supervision
  // lock the spawn takes next (Node::adopt).
  count_live(&WorkerRemote::spawned, foreign_spawned_, std::memory_order_relaxed);
}

void Scheduler::count_finish() noexcept {
  // release; pairs with the acquire in live_fibers().
  count_live(&WorkerRemote::finished, foreign_finished_, std::memory_order_release);
}

std::int64_t Scheduler::live_fibers() const noexcept {
  // Exits first, then spawns: an exit seen here (acquire) carries its spawn
  // with it, so the difference never goes below the truth.
  std::uint64_t finished = foreign_finished_.load(std::memory_order_seq_cst);
  for (const WorkerRemote* w : workers) finished += w->finished.load(std::memory_order_acquire);
  std::uint64_t spawned = foreign_spawned_.load(std::memory_order_seq_cst);
  for (const WorkerRemote* w : workers) spawned += w->spawned.load(std::memory_order_acquire);
  return static_cast<std::int64_t>(spawned - finished);
}

bool Scheduler::fail(std::exception_ptr error, bool abort) noexcept {
  {
    ThreadLock lock(mutex_);
    if (failure_) return false;
    failure_ = std::move(error);
  }
  if (abort) root->abort_tree();
  return true;
}

void Scheduler::task_failed(std::string_view who, std::exception_ptr error) noexcept {
  if (!config.catch_exceptions && fail(error)) return;
  write_log(config.on_log, LogLevel::kError,
            fmt::format("{} exited by exception{}: {}", who,
                        config.catch_exceptions ? "" : " after the runtime's first failure",
                        describe_exception(error)));
}

std::exception_ptr Scheduler::failure() const {
  ThreadLock lock(mutex_);
  return failure_;
}

void Scheduler::start_dedicated(Fiber* fiber) {
  ThreadLock lock(mutex_);
  {
    std::vector<std::thread> finished = reap_dedicated();
    lock.unlock();
    for (auto& t : finished) t.join();
    lock.lock();
  }
  dedicated_.emplace_back([self = shared_from_this(), fiber] {
    Scheduler& s = *self;
    std::optional<Worker> worker;
    try {
      worker.emplace(s, Placement::kDedicated, 0);
    } catch (...) {
      // The fiber never runs; with catch_exceptions = false the runtime fails.
      const auto error = std::current_exception();
      abandon_unrun(*fiber, fiber->record ? fiber->record->shared_slot : 0);
      s.task_failed("dedicated fiber (its worker could not start)", error);
    }
    if (worker) worker->run_dedicated(fiber);
    worker.reset();
    ThreadLock done(s.mutex_);
    s.dedicated_finished_.push_back(std::this_thread::get_id());
  });
}

std::vector<std::thread> Scheduler::reap_dedicated() {
  auto finished = std::move(dedicated_finished_);
  dedicated_finished_.clear();
  std::vector<std::thread> to_join;
  for (auto id : finished) {
    auto it = std::find_if(dedicated_.begin(), dedicated_.end(),
                           [id](const std::thread& t) { return t.get_id() == id; });
    if (it != dedicated_.end()) {
      to_join.push_back(std::move(*it));
      dedicated_.erase(it);
    }
  }
  return to_join;
}

void Scheduler::join_dedicated() {
  std::vector<std::thread> threads;
  {
    ThreadLock lock(mutex_);
    threads.swap(dedicated_);
    dedicated_finished_.clear();
  }
  for (auto& t : threads) t.join();
}

void Scheduler::report_started(std::exception_ptr error) {
  ThreadLock lock(mutex_);
  started_ready_ = true;
  started_error_ = std::move(error);
  cv_.notify_all();
}

std::exception_ptr Scheduler::wait_started() {
  ThreadLock lock(mutex_);
  lock.wait(cv_, [this]() SPINDLE_REQUIRES(mutex_) { return started_ready_; });
  started_ready_ = false;
  return std::exchange(started_error_, nullptr);
}

void Scheduler::release_workers(bool go) {
  ThreadLock lock(mutex_);
  released_ = true;
  go_ = go;
  cv_.notify_all();
}

bool Scheduler::wait_release() {
  ThreadLock lock(mutex_);
  lock.wait(cv_, [this]() SPINDLE_REQUIRES(mutex_) { return released_; });
  return go_;
}

void Scheduler::worker_done() {
  ThreadLock lock(mutex_);
  ++workers_done_;
  cv_.notify_all();
}

void Scheduler::wait_workers_done() {
  ThreadLock lock(mutex_);
  lock.wait(cv_, [this]() SPINDLE_REQUIRES(mutex_) { return workers_done_ == workers.size(); });
}

}  // namespace spindle::detail
