#include "core/worker.hpp"

#include <cxxabi.h>
#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <stdexcept>
#include <utility>

#include "core/current.hpp"
#include "core/park_word.hpp"
#include "core/ready_entry.hpp"
#include "core/scheduler.hpp"
#include "park/fence.hpp"
#include "spindle/base/assert.hpp"
#include "spindle/fiber/overflow.hpp"
#include "time/coarse_clock.hpp"

namespace spindle::detail {
namespace {

constexpr int kBatch = 64;  // fiber turns between two I/O services
// An I/O service dispatches at most as many completions as the run queue has
// room for, and at least this many: the rest wait in the CQ. Every completion
// makes a fiber ready; reaping them all at once would send thousands through
// the global queue, and each would run long after its completion touched it.
constexpr std::size_t kMinCompletions = 32;
constexpr std::size_t kStackCache = 64;   // stacks kept per worker
constexpr std::uint64_t kIdBlock = 4096;  // fiber ids taken at a time
constexpr auto kShutdownPoll = std::chrono::milliseconds(1);

EhGlobals* eh_globals() noexcept { return reinterpret_cast<EhGlobals*>(abi::__cxa_get_globals()); }

std::uint64_t seed_for(std::size_t index) noexcept {
  return 0x9E3779B97F4A7C15ull * (index + 1) ^ reinterpret_cast<std::uintptr_t>(&index);
}

[[gnu::noinline]] void run_body(Fiber* f) noexcept {
  if (f->aborted()) {
    f->discard();
    f->exit_outcome = Task::Outcome::kAborted;
  } else {
    try {
      f->run();
      f->exit_outcome = f->aborted() ? Task::Outcome::kAborted : Task::Outcome::kValue;
    } catch (...) {
      f->exit_error = std::current_exception();
      f->exit_outcome = Task::Outcome::kException;
    }
  }
  destroy_fiber_locals(f);
}

void fiber_main(void* arg) {
  auto* f = static_cast<Fiber*>(arg);
  current_worker()->arrive(f);
  run_body(f);
  Worker::exit(f);
}

}  // namespace

Worker::Worker(Scheduler& scheduler, Placement placement, std::size_t index)
    : blocks_(block_depot()),
      remote_(scheduler, placement, index, &wake_fd_),
      io_(scheduler.io_factory(scheduler, remote_, wake_fd_)),
      timers_(&park_waiting),
      wheel_(scheduler.config.timeout_wheel_tick,
             std::max(scheduler.config.connect_timeout, scheduler.config.read_write_timeout),
             Clock::now()),
      stacks_(scheduler.stack_pool, kStackCache),
      spinner_(SpinnerConfig{scheduler.config.idle_spinner.budget_us,
                             scheduler.config.idle_spinner.max_budget_us,
                             scheduler.config.idle_spinner.quick_wake_us}),
      global_countdown_(scheduler.config.global_queue_interval),
      rng_(seed_for(index)),
      sim_(scheduler.sim),
      eh_(eh_globals()) {
  if (current_worker()) {
    throw std::logic_error(
        "spindle: Runtime::run called on a thread that already runs a spindle worker "
        "(a fiber cannot run a nested runtime)");
  }
  fiber::ensure_signal_stack();
  stats_ = placement == Placement::kPool ? &scheduler.metrics->pool_slot(index)
                                         : scheduler.metrics->acquire_dedicated_slot();
  set_current_worker(this);
}

Worker::~Worker() {
  apply_mail();  // drops the fiber references of late cancel requests
  SPINDLE_ASSERT(io_->pending() == 0, "a worker stopped with operations in flight");
  stats_->set(Stat::kPendingOperations, 0);
  if (placement() == Placement::kDedicated) scheduler().metrics->release_dedicated_slot(stats_);
  set_current_worker(nullptr);
}

std::uint64_t Worker::allocate_id() noexcept {
  if (id_next_ == id_end_) {
    id_next_ = scheduler().allocate_id_block(kIdBlock);
    id_end_ = id_next_ + kIdBlock;
  }
  return id_next_++;
}

TaskRecord* Worker::intern_record(std::string_view name, Placement execution, TaskKind kind) {
  TaskRecord* r = scheduler().metrics->intern(name, execution, kind);
  records_[records_next_++ % records_.size()] = r;
  return r;
}

void Worker::put_queue(ReadyEntry* e) noexcept {
  SPINDLE_DCHECK(placement() == Placement::kPool);
  if (sim_) [[unlikely]] {
    sim_ready_.push_back(e);
    return;
  }
  Scheduler& s = scheduler();
  remote_.run_queue_.push_back(
      e, [&s](ReadyEntry** items, std::size_t n) { s.global.push(items, n); });
}

bool Worker::stealable_after_put() noexcept {
  Scheduler& s = scheduler();
  if (s.workers.size() == 1) return false;
  if (remote_.run_queue_.is_stealable()) return true;
  // Not worth a wake: a thief would take it only once this worker stays in
  // one turn, which the watcher looks for. Unwatched, a parked worker is woken
  // to watch.
  if (!s.idle.watched() && s.idle.idle_mask() != 0) s.notify_parked();
  return false;
}

void Worker::put_new(ReadyEntry* e) noexcept {
  put_queue(e);
  // A spawn must reach a parked worker (the fenced handshake).
  if (stealable_after_put()) scheduler().notify_parked();
}

void Worker::put(Fiber* f) noexcept {
  if (f->pinned) {
    SPINDLE_DCHECK(f->pinned == &remote_);
    pinned_ready_.push_back(f);
    return;
  }
  put_ready(ready_entry(f));
}

void Worker::put_ready(ReadyEntry* e) noexcept {
  put_queue(e);
  // An entry this worker would run anyway wakes one only if one is seen
  // without a fence: missing it costs parallelism, never progress.
  if (stealable_after_put() && scheduler().idle.idle_mask_relaxed() != 0) {
    scheduler().notify_parked();
  }
}

void Worker::put_woken(Fiber* f) noexcept {
  if (!resuming_ || f->pinned || !next_.empty()) {
    put(f);  // a burst of wakes keeps its order: the first is next
    return;
  }
  next_.put(f, concluding_ ? NextSlot::Link::kInherits : NextSlot::Link::kWoken);
}

void Worker::put_next(Fiber* f) noexcept {
  if (Fiber* older = next_.replace(f, NextSlot::Link::kInherits)) put(older);
}

void Worker::suspend(Fiber* f, Suspend& s) noexcept {
  s.fiber = f;
  Worker* w = current_worker();
  w->save_eh(f);
  if (Fiber* next = w->take_handoff(StackSource::kCache)) {
    w->arriving_ = &s;
    w->enter(next);
    fiber::switch_context(*f->context, *next->context, nullptr);
  } else {
    fiber::switch_context(*f->context, w->context_, &s);
  }
  // Resumed, perhaps on another worker: a thread-local read after the switch.
  current_worker()->arrive(f);
}

bool Worker::take_io_turn() noexcept {
  if (turns_left_ <= 0 || ready_here() || !remote_.mailbox_.empty()) return false;
  if (placement() == Placement::kPool && !scheduler().global.empty()) return false;
  --turns_left_;
  remote_.stall_probe_.end_turn();
  remote_.stall_probe_.begin_turn();
  return true;
}

void Worker::service_io_in_turn() noexcept {
  resuming_ = false;  // not a wake by the running fiber: no next-fiber slot
  io_->service(completion_budget());
  resuming_ = true;
}

void Worker::exit(Fiber* f) noexcept {
  Worker* w = current_worker();
  w->conclude(f);
  Suspend& s = w->exiting_;
  s = Suspend{};
  s.fiber = f;
  s.kind = Suspend::Kind::kExit;
  if (Fiber* next = w->take_handoff(StackSource::kPool)) {
    w->arriving_ = &s;
    w->enter(next);
    fiber::exit_to(*f->context, *next->context, nullptr);
  }
  fiber::exit_to(*f->context, w->context_, &s);
}

void Worker::arrive(Fiber* self) noexcept {
  if (self == expecting_fiber_) expecting_fiber_ = nullptr;
  if (Suspend* s = std::exchange(arriving_, nullptr)) {
    current_ = nullptr;
    complete_switch(*s);
    current_ = self;
  }
}

Fiber* Worker::take_handoff(StackSource source) noexcept {
  // Only work already on this worker: the worker loop looks further.
  if (turns_left_ <= 0 || !ready_here()) return nullptr;
  Fiber* next = take_next();
  if (!next || next->started) return next;
  // A new fiber needs a stack. A parking fiber may hold a wait queue's lock
  // until its switch completes, so then only a cached stack will do (the pool
  // may block in a system call, or fail); an exiting fiber holds none. If
  // there is no stack, the worker loop starts the fiber: it goes back into
  // the next-fiber slot, and goes first.
  fiber::Stack stack;
  if (source == StackSource::kPool || stacks_.cached() > 0) {
    try {
      stack = stacks_.allocate();
    } catch (...) {
    }
  }
  if (!stack) {
    next_.restore(next);
    return nullptr;
  }
  start(next, stack);
  return next;
}

void Worker::enter(Fiber* f) noexcept {
  current_ = f;
  load_eh(f);
  remote_.stall_probe_.begin_turn();
  --turns_left_;
}

void Worker::save_eh(Fiber* f) noexcept {
  f->eh_state[0] = eh_->caught;
  f->eh_state[1] = reinterpret_cast<void*>(static_cast<std::uintptr_t>(eh_->uncaught));
}

void Worker::load_eh(const Fiber* f) noexcept {
  eh_->caught = f->eh_state[0];
  eh_->uncaught = static_cast<unsigned int>(reinterpret_cast<std::uintptr_t>(f->eh_state[1]));
}

void Worker::start(Fiber* f, fiber::Stack stack) noexcept {
  f->started = true;
  f->stack = stack;
  f->context.emplace(f->stack, &fiber_main, f);
}

void Worker::resume(Fiber* f) noexcept {
  if (remote_.io_spinning.load(std::memory_order_relaxed)) {
    remote_.io_spinning.store(false, std::memory_order_relaxed);
  }
  resuming_ = true;
  resume_one(f);
  resuming_ = false;
}

void Worker::resume_one(Fiber* f) noexcept {
  if (!f->started) {
    fiber::Stack stack;
    try {
      stack = stacks_.allocate();
    } catch (...) {
      // No stack could be mapped: the fiber ends with that error unrun.
      f->discard();
      f->exit_error = std::current_exception();
      f->exit_outcome = Task::Outcome::kException;
      conclude(f);
      retire(f);
      return;
    }
    start(f, stack);
  }
  const EhGlobals mine = *eh_;
  enter(f);
  // Returns when a fiber (f, or one f handed over to) switches back here.
  void* data = fiber::switch_context(context_, *f->context, nullptr);
  current_ = nullptr;
  *eh_ = mine;
  complete_switch(*static_cast<Suspend*>(data));
}

// Runs once the context of s.fiber is saved (or, for an exit, abandoned), on
// the stack that took over: the worker loop's or the next fiber's.
void Worker::complete_switch(const Suspend& s) noexcept {
  remote_.stall_probe_.end_turn();
  switch (s.kind) {
    case Suspend::Kind::kYield:
      put(s.fiber);
      break;
    case Suspend::Kind::kPark:
      after_park(s.fiber, s);
      break;
    case Suspend::Kind::kExit:
      retire(s.fiber);
      break;
  }
}

void Worker::after_park(Fiber* f, const Suspend& s) noexcept {
  // Copy everything out of `s` first: once the park word is armed an abort
  // may claim the fiber, resume it elsewhere and reuse its stack.
  const std::uint64_t epoch = f->epoch;
  const ParkKind kind = s.park;
  const auto publish = s.publish;
  void* const arg = s.arg;
  if (s.deadline != kNoDeadline) {
    timers_.add(s.deadline, f, epoch);
    f->timer_heap = &timers_;
  } else {
    f->timer_heap = nullptr;
  }
  // relaxed: published by the arm below (deliver_abort reads it after its fetch_or).
  if (kind == ParkKind::kIo) f->io_owner.store(&remote_, std::memory_order_relaxed);
  // Steps 2 and 3 of park_word.hpp. Once armed, the fiber may be woken, run
  // elsewhere and be freed at any moment: nothing below reads it on that path.
  const bool armed = arm_park(*f, epoch, kind);
  if (publish) publish(arg);
  if (armed) return;
  // Aborted before it parked: never armed, so no other waker can claim it.
  f->wake_reason = WakeReason::kAborted;
  if (f->timer_heap) f->timer_heap->note_stale();
  scheduler().put_woken(f);
}

void Worker::conclude(Fiber* f) noexcept {
  const Task::Outcome outcome = f->exit_outcome;
  std::exception_ptr error = std::move(f->exit_error);
  if (outcome == Task::Outcome::kException && !f->root) {
    scheduler().task_failed(fmt::format("fiber {}{}{}{}", f->id, f->name.empty() ? "" : " '",
                                        f->name, f->name.empty() ? "" : "'"),
                            error);
  }
  // Before the finish: a joiner that scrapes sees the task no longer running.
  if (TaskRecord* r = f->record)
    count_task_finish(r, placement() == Placement::kPool ? index() : r->shared_slot);
  // The cascade (everything this fiber spawned is aborted, and its own node
  // closes to further spawns), then the outcome.
  concluding_ = true;  // the fiber woken first continues this thread of control
  f->close_and_complete(outcome, std::move(error));
  concluding_ = false;
  if (f->root) scheduler().begin_shutdown();
  if (f == dedicated_root_) dedicated_done_ = true;
}

void Worker::retire(Fiber* f) noexcept {
  if (f->context) {
    f->context.reset();
    stacks_.deallocate(f->stack);
    f->stack = {};
  }
  // Worker 0 counts the live fibers while closing: nudge it, before this
  // exit is counted (once the count may reach zero, worker 0 may be gone).
  if (scheduler().closing()) scheduler().workers[0]->unpark();
  scheduler().count_finish();
  // Detached later, with others; its value goes now if no handle can join it.
  if (f->sole_reference()) f->drop_value();
  retired_[retired_count_++] = f;
  if (retired_count_ == retired_.size()) release_retired();
}

void Worker::release_retired() noexcept {
  Node::detach_all(retired_.data(), retired_count_);
  for (std::uint32_t i = 0; i < retired_count_; ++i) retired_[i]->unref();
  retired_count_ = 0;
}

Fiber* Worker::take_next() noexcept {
  if (sim_) [[unlikely]]
    return take_simulated();
  Fiber* over_budget = nullptr;
  if (Fiber* f = next_.take(&over_budget)) return f;
  if (over_budget) put(over_budget);
  Scheduler& s = scheduler();
  const bool pool = placement() == Placement::kPool;
  if (--global_countdown_ == 0) {
    global_countdown_ = s.config.global_queue_interval;
    if (pool) {
      if (Fiber* f = take_global()) return f;
    }
  }
  // Alternate which ready list goes first so neither starves the other.
  if (global_countdown_ & 1) {
    if (Fiber* f = pinned_ready_.pop_front()) return f;
    if (Fiber* f = take_local()) return f;
  } else {
    if (Fiber* f = take_local()) return f;
    if (Fiber* f = pinned_ready_.pop_front()) return f;
  }
  return pool ? take_global() : nullptr;
}

Fiber* Worker::take_simulated() noexcept {
  Fiber* over_budget = nullptr;
  if (Fiber* f = next_.take(&over_budget)) sim_ready_.push_back(ready_entry(f));
  if (over_budget) sim_ready_.push_back(ready_entry(over_budget));
  while (Fiber* f = pinned_ready_.pop_front()) sim_ready_.push_back(ready_entry(f));
  while (!sim_ready_.empty()) {
    const std::size_t i = sim_->below(sim_ready_.size());
    ReadyEntry* e = sim_ready_[i];
    sim_ready_[i] = sim_ready_.back();
    sim_ready_.pop_back();
    if (Fiber* f = claim_entry(e)) {
      sim_->record(f->id);
      return f;
    }
  }
  return nullptr;
}

Fiber* Worker::take_local() noexcept {
  for (;;) {
    if (claimed_next_ == claimed_end_) {
      claimed_next_ = 0;
      claimed_end_ = remote_.run_queue_.pop_batch(claimed_.data(), claimed_.size());
      if (claimed_end_ == 0) return nullptr;
    }
    if (Fiber* f = claim_entry(claimed_[claimed_next_++])) {
      prefetch_ahead();
      return f;
    }
  }
}

void Worker::prefetch_ahead() const noexcept {
  if (claimed_next_ + 1 < claimed_end_) {
    // The lines of the fields a resume and an I/O call touch. Only
    // addresses: a spawn entry's fiber may be running on a joiner's worker.
    const Fiber* after = entry_fiber(claimed_[claimed_next_ + 1]);
    __builtin_prefetch(after);
    __builtin_prefetch(&after->io_request);
    __builtin_prefetch(&after->context);
  }
  if (claimed_next_ < claimed_end_ && !is_spawn_entry(claimed_[claimed_next_])) {
    // A ready fiber's entry is this worker's to run: nothing else touches
    // the fiber, so its fields can be read.
    const Fiber* next = entry_fiber(claimed_[claimed_next_]);
    if (next->io_request != nullptr) next->context->prefetch();
  }
}

Fiber* Worker::take_global() noexcept {
  Scheduler& s = scheduler();
  const std::size_t len = s.global.len();
  if (len == 0) return nullptr;
  // No more than would fill the run queue to half.
  RunQueue<ReadyEntry>& q = remote_.run_queue_;
  const std::size_t room = (RunQueue<ReadyEntry>::kCapacity - q.len()) / 2;
  const std::size_t want =
      std::min(GlobalQueue::share(len, s.workers.size()), std::max<std::size_t>(room, 1));
  std::array<ReadyEntry*, GlobalQueue::kMaxShare> batch;
  const std::size_t n = s.global.take(batch.data(), want);
  if (n == 0) return nullptr;
  for (std::size_t i = 1; i < n; ++i) put_ready(batch[i]);
  if (q.is_stealable()) s.notify_parked();  // once for the batch
  if (Fiber* f = claim_entry(batch[0])) return f;
  return take_local();
}

bool Worker::run_batch() noexcept {
  batch_ms_ = coarse_now_ms();
  turns_left_ = kBatch;
  bool ran = false;
  while (turns_left_ > 0) {
    Fiber* f = take_next();
    if (!f) break;
    resume(f);
    ran = true;
  }
  return ran;
}

Fiber* Worker::take_stolen() noexcept {
  if (placement() != Placement::kPool) return nullptr;
  Scheduler& s = scheduler();
  const std::size_t n = s.workers.size();
  if (!searching_) {
    if (n == 1 || !s.idle.try_begin_search()) return nullptr;
    searching_ = true;
  }
  Fiber* f = nullptr;
  ReadyEntry* stolen = nullptr;
  rng_ ^= rng_ << 13;
  rng_ ^= rng_ >> 7;
  rng_ ^= rng_ << 17;
  const std::size_t start = rng_ % n;
  // A due watch also takes a fiber queued alone behind a turn that has lasted
  // it, and sets the next watch's length.
  const bool due = watch_.take_due();
  bool queued = false;
  for (std::size_t i = 0; i < n && !stolen; ++i) {
    WorkerRemote* victim = s.workers[(start + i) % n];
    if (victim == &remote_) continue;
    RunQueue<ReadyEntry>& q = victim->run_queue();
    queued = queued || (due && !q.empty());
    stolen = q.steal_into(remote_.run_queue_, due && watch_.stuck(*victim));
  }
  if (due) watch_.rearm(queued || stolen);
  if (stolen) {
    stats_->add(Stat::kSteals, 1);
    if (!(f = claim_entry(stolen))) f = take_local();
  }
  if (!f) f = take_global();
  searching_ = false;
  const bool last = s.idle.end_search();
  // The last searcher to find work passes the search on if there is more
  // (and only then: a lone wake must not pay for a second worker's wake-up).
  if (f && last && more_work_to_find()) s.notify_parked();
  return f;
}

bool Worker::more_work_to_find() const noexcept {
  // seq_cst after end_search(): a pusher that saw this worker still searching
  // (and so woke nobody) published its work before that; it is seen here.
  full_fence();
  const Scheduler& s = scheduler();
  if (local_ready() || !s.global.empty()) return true;
  for (const WorkerRemote* w : s.workers) {
    if (w != &remote_ && w->run_queue().is_stealable()) return true;
  }
  return false;
}

// Two fibers that answer each other through the kernel (the ends of a pipe,
// a socket pair, a loopback connection) on two workers would pay a
// cross-worker hand-off per message, each worker waking or spinning for the
// other's. When one of them is the only fiber this idle worker's service
// made ready (a completion, usually), and another worker has just gone idle
// spinning on its own I/O (whose fiber, likely the other end, parked a
// moment ago), that worker runs it: from then on the pair answers each other
// there, within one worker's turns. Stealing spreads them again once one
// worker has more than it can run.
void Worker::pass_lone_fiber() noexcept {
  if (!next_.empty() || !pinned_ready_.empty() || claimed_next_ != claimed_end_ ||
      remote_.run_queue_.len() != 1 || !remote_.mailbox_.empty()) {
    return;
  }
  Scheduler& s = scheduler();
  for (WorkerRemote* w : s.workers) {
    if (w == &remote_ || !w->io_spinning.load(std::memory_order_relaxed)) continue;
    ReadyEntry* e = remote_.run_queue_.pop();
    if (e == nullptr) return;  // stolen meanwhile
    if (is_spawn_entry(e)) {
      put_queue(e);  // not started: a joiner may claim it; it stays here
      return;
    }
    // By mail into its next-fiber slot: from a queue, a thief (this worker
    // first) could take it back before it runs there.
    w->send({MailMessage::Kind::kAdopt, entry_fiber(e), 0});
    stats_->add(Stat::kHandOvers, 1);
    return;
  }
}

void Worker::apply_mail() noexcept {
  remote_.mailbox_.take(mail_);
  for (const MailMessage& m : mail_) {
    switch (m.kind) {
      case MailMessage::Kind::kResume:
        pinned_ready_.push_back(m.fiber);
        break;
      case MailMessage::Kind::kAdopt:
        put_next(m.fiber);  // unstealable: it came here to run here
        break;
      case MailMessage::Kind::kCancelIo:
        io_->cancel_parked(m.fiber, m.epoch);
        m.fiber->unref();
        break;
      case MailMessage::Kind::kIoDone:
        io_->offload_done(m.fiber);
        break;
    }
  }
  mail_.clear();
}

std::size_t Worker::completion_budget() const noexcept {
  constexpr std::size_t kCapacity = RunQueue<ReadyEntry>::kCapacity;
  const std::size_t queued = remote_.run_queue_.len();
  const std::size_t room = queued < kCapacity ? kCapacity - queued : 0;
  return std::max(room, kMinCompletions);
}

void Worker::service() noexcept {
  io_->service(completion_budget());
  // Mirrored for scrapes on other threads (the backend is this thread's alone).
  stats_->set(Stat::kPendingOperations, io_->pending());
  if (timers_.size() != 0 || !wheel_.empty()) {
    const Deadline now = Clock::now();
    timers_.expire(
        now, [](Fiber* f, std::uint64_t epoch) { wake_fiber(f, epoch, WakeReason::kTimedOut); });
    wheel_.advance(now, [this](WheelEntry* e) { io_->expire(e); });
  }
  apply_mail();
}

bool Worker::quit() const noexcept {
  if (placement() == Placement::kDedicated) return dedicated_done_;
  return scheduler().shutdown_complete();
}

bool Worker::has_work_anywhere() const noexcept {
  const Scheduler& s = scheduler();
  if (ready_here() || !remote_.mailbox_.empty() || quit() || s.roster.pause_requested()) {
    return true;
  }
  if (placement() == Placement::kPool) {
    if (!s.global.empty()) return true;
    for (const WorkerRemote* w : s.workers) {
      if (w != &remote_ && w->run_queue().is_stealable()) return true;
    }
    if (index() == 0 && s.closing() && s.live_fibers() == 0) return true;
  }
  return false;
}

std::optional<std::chrono::nanoseconds> Worker::park_timeout() const noexcept {
  std::optional<Deadline> next = timers_.next();
  if (auto w = wheel_.next_deadline(); w && (!next || *w < *next)) next = w;
  const Deadline now = Clock::now();
  if (index() == 0 && placement() == Placement::kPool && scheduler().closing()) {
    if (!next || *next > now + kShutdownPoll) next = now + kShutdownPoll;
  }
  if (!next) return std::nullopt;
  return std::max<std::chrono::nanoseconds>(*next - now, std::chrono::nanoseconds::zero());
}

void Worker::park_simulated() noexcept {
  release_retired();
  if (has_work_anywhere()) return;
  if (const auto timeout = park_timeout()) {
    sim_->advance_to(sim_->now() + *timeout);
    return;
  }
  SPINDLE_ASSERT(!deadlocked_,
                 "spindle::sim: fibers still blocked for good after the abort of "
                 "every fiber that a deadlock caused");
  deadlocked_ = true;
  const auto at = sim_->now() - Deadline(Simulation::kStart);
  std::string fibers;
  try {
    fibers = scheduler().list_fibers(scheduler());
  } catch (...) {
    fibers = "(the listing of the fibers failed)";
  }
  scheduler().fail(std::make_exception_ptr(std::runtime_error(fmt::format(
      "spindle::sim: deadlock at virtual time {} ns (seed {}): every fiber is blocked and no "
      "timer or deadline is pending. The fibers:\n{}",
      at.count(), sim_->seed(), fibers))));
}

void Worker::park() noexcept {
  if (sim_) [[unlikely]] {
    park_simulated();
    return;
  }
  release_retired();
  auto timeout = park_timeout();
  Fiber* const expecting = std::exchange(expecting_fiber_, nullptr);
  Scheduler& s = scheduler();
  const bool pool = placement() == Placement::kPool;
  Parker& parker = remote_.parker_;
  parker.clear();
  if (pool) s.idle.set_idle(index());
  full_fence();
  if (!has_work_anywhere()) {
    stats_->add(Stat::kWorkerParks, 1);
    if (pool) {
      if (const auto left = watch_.begin(s, index()); left && (!timeout || *left < *timeout)) {
        timeout = left;
      }
    }
    if (io_->pending() > 0) {
      // I/O in flight: block in the backend, so completions end the wait too.
      std::size_t completions = 1;
      if (expecting != nullptr) {
        const auto left = std::max<std::chrono::nanoseconds>(expected_by_ - Clock::now(),
                                                             std::chrono::nanoseconds::zero());
        if (!timeout || left < *timeout) timeout = left;
        completions = expected_completions_;
      }
      // With other pool workers, a backend that sees completions without a
      // system call is watched for a while first, as the futex park below
      // is: a fiber on another worker may be about to answer an operation
      // here (the other end of a pipe or socket pair), and then the
      // completion costs no sleep and no wake-up. A lone worker's
      // completions all come from outside, at times a spin cannot guess.
      // (Whether another worker is awake is no guide: it may be spinning
      // here too, idle bit set, about to run the fiber that answers.)
      const bool spin_on_io = io_->sees_completions() && pool && s.workers.size() > 1;
      if (spin_on_io) remote_.io_spinning.store(true, std::memory_order_relaxed);
      const bool found = spin_on_io && spinner_.spin([this, &parker] {
        return parker.signalled() || io_->work_visible();
      });
      // Still idle after a wake that brought nothing to run (a wake to watch):
      // it spins again at its next park. Cleared when it sleeps or runs a fiber.
      if (!found) remote_.io_spinning.store(false, std::memory_order_relaxed);
      if (!found && parker.arm_eventfd()) {
        const Deadline start = spin_on_io ? Clock::now() : Deadline{};
        io_->wait(timeout, completions, completion_budget());
        parker.disarm();
        if (spin_on_io) spinner_.on_wake(Clock::now() - start);
      }
    } else if (!spinner_.spin([&parker] { return parker.signalled(); })) {
      const auto slept = parker.park(timeout);
      if (slept.count() > 0) spinner_.on_wake(slept);
    }
    if (pool) watch_.end(s);
  }
  // A pusher that claimed our idle bit counted us as a searcher.
  if (pool && !s.idle.clear_idle(index())) searching_ = true;
}

void Worker::run_pool() {
  Scheduler& s = scheduler();
  s.roster.join(&remote_);
  for (;;) {
    s.roster.hold_if_requested(&remote_);
    const bool ran = run_batch();
    service();
    if (ready_here()) {
      if (!ran) pass_lone_fiber();
      continue;
    }
    if (index() == 0 && s.closing() && s.live_fibers() == 0) s.complete_shutdown();
    if (quit()) break;
    if (Fiber* f = take_stolen()) {
      resume(f);
      continue;
    }
    park();
    if (ready_here()) pass_lone_fiber();  // what the backend's wait completed
    if (searching_) {
      if (Fiber* f = take_stolen()) resume(f);
    }
  }
  release_retired();
  s.roster.leave(&remote_);
}

void Worker::run_dedicated(Fiber* root) {
  Scheduler& s = scheduler();
  dedicated_root_ = root;
  root->pinned = &remote_;
  pinned_ready_.push_back(root);
  s.roster.join(&remote_);
  while (!dedicated_done_) {
    s.roster.hold_if_requested(&remote_);
    run_batch();
    service();
    if (!pinned_ready_.empty() || dedicated_done_) continue;
    park();
  }
  release_retired();
  s.roster.leave(&remote_);
}

}  // namespace spindle::detail
