#include "worker.hpp"

#include <cxxabi.h>
#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <stdexcept>
#include <utility>

#include "coarse_clock.hpp"
#include "fence.hpp"
#include "io_request.hpp"
#include "scheduler.hpp"
#include "spawn_entry.hpp"
#include "spindle/base/assert.hpp"
#include "spindle/fiber/overflow.hpp"

namespace spindle::detail {
namespace {

constexpr int kBatch = 64;  // fiber turns between two ring services
// A ring service dispatches at most as many completions as the run queue has
// room for, and at least this many: the rest wait in the CQ. Every completion
// makes a fiber ready; reaping them all at once would send thousands through
// the global queue, and each would run long after its completion touched it.
constexpr std::size_t kMinCompletions = 32;
// Fibers taken from the next-fiber slot in a row (a streak) before the one in
// it goes to the back of the run queue: two fibers waking each other keep
// their worker, and their stacks hot, for this many hand-overs...
constexpr std::uint32_t kNextRunBudget = 32;
// ... and hand-overs that continue one thread of control, as a call and its
// return do (a joiner to the child it claimed, an ended fiber to its joiner),
// for this many: a fork-join tree runs depth first.
constexpr std::uint32_t kInheritedRunBudget = 256;
// Past its budget, a streak of wakes goes on while it is quick: for
// kStreakSlice from the first fiber over budget (each streak that ends sends
// the worker to fibers whose stacks have gone cold). The clock is read then
// and every kStreakCheck fibers after, so a streak of slow fibers ends
// kStreakCheck past its budget. Inheriting hand-overs keep their count: the
// extension gained a fork-join tree nothing.
constexpr std::uint32_t kStreakCheck = 16;
constexpr auto kStreakSlice = std::chrono::microseconds(100);
// A watcher (idle_set.hpp) looks again after kWatchMin while the workers it
// watches have fibers queued, and backs off, doubling up to kWatchMax, while
// they have none. A fiber queued alone behind a turn longer than the watch
// moves to the watcher.
constexpr auto kWatchMin = std::chrono::microseconds(100);
constexpr auto kWatchMax = std::chrono::microseconds(1600);
constexpr std::size_t kStackCache = 64;   // stacks kept per worker
constexpr std::uint64_t kIdBlock = 4096;  // fiber ids taken at a time
constexpr auto kShutdownPoll = std::chrono::milliseconds(1);

thread_local Worker* t_worker = nullptr;

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

[[gnu::noinline]] Worker* current_worker() noexcept { return t_worker; }

[[gnu::noinline]] Fiber* current_fiber() noexcept {
  Worker* w = t_worker;
  return w ? w->current() : nullptr;
}

Worker::Worker(Scheduler& scheduler, Kind kind, std::size_t index)
    : scheduler_(scheduler),
      blocks_(block_depot()),
      kind_(kind),
      index_(index),
      ring_(uring::RingOptions{scheduler.config.ring_entries, scheduler.config.on_log}),
      parker_(&wake_source_),
      mailbox_(parker_),
      wheel_(scheduler.config.timeout_wheel_tick,
             std::max(scheduler.config.connect_timeout, scheduler.config.read_write_timeout),
             Clock::now()),
      stacks_(scheduler.stack_pool, kStackCache),
      spinner_(SpinnerConfig{scheduler.config.idle_spinner.budget_us,
                             scheduler.config.idle_spinner.max_budget_us,
                             scheduler.config.idle_spinner.quick_wake_us}),
      global_countdown_(scheduler.config.global_queue_interval),
      rng_(seed_for(index)),
      watch_interval_(kWatchMin),
      eh_(eh_globals()) {
  if (t_worker) {
    throw std::logic_error(
        "spindle: Runtime::run called on a thread that already runs a spindle worker "
        "(a fiber cannot run a nested runtime)");
  }
  fiber::ensure_signal_stack();
  stats_ = kind == Kind::kPool ? &scheduler.metrics->pool_slot(index)
                               : scheduler.metrics->acquire_dedicated_slot();
  t_worker = this;
}

Worker::~Worker() {
  apply_mail();  // drops the fiber references of late cancel requests
  SPINDLE_ASSERT(ring_.pending() == 0, "a worker stopped with operations in flight");
  stats_->set(Stat::kPendingOperations, 0);
  if (kind_ == Kind::kDedicated) scheduler_.metrics->release_dedicated_slot(stats_);
  t_worker = nullptr;
}

std::uint64_t Worker::allocate_id() noexcept {
  if (id_next_ == id_end_) {
    id_next_ = scheduler_.allocate_id_block(kIdBlock);
    id_end_ = id_next_ + kIdBlock;
  }
  return id_next_++;
}

TaskRecord* Worker::intern_record(std::string_view name, Execution execution, TaskKind kind) {
  TaskRecord* r = scheduler_.metrics->intern(name, execution, kind);
  records_[records_next_++ % records_.size()] = r;
  return r;
}

void Worker::push_ready(Fiber* e, bool is_new) noexcept {
  if (!is_spawn_entry(e) && e->pinned) {
    SPINDLE_DCHECK(e->pinned == this);
    pinned_ready_.push(e);
    return;
  }
  SPINDLE_DCHECK(kind_ == Kind::kPool);
  run_queue_.push_back(e,
                       [this](Fiber** items, std::size_t n) { scheduler_.global.push(items, n); });
  if (scheduler_.workers.size() == 1) return;
  if (!run_queue_.is_stealable()) {
    // Not worth a wake: a thief would take it only once this worker stays in
    // one turn, which the watcher looks for. Unwatched, a parked worker is
    // woken to watch.
    if (!scheduler_.idle.watched() && scheduler_.idle.idle_mask() != 0) scheduler_.notify_parked();
    return;
  }
  // A spawn must reach a parked worker (the fenced handshake). A fiber this
  // worker would run anyway (a requeue, a wake or completion handled here)
  // wakes one only if one is seen without a fence: missing it costs
  // parallelism, never progress.
  if (is_new || scheduler_.idle.idle_mask_relaxed() != 0) scheduler_.notify_parked();
}

void Worker::push_woken(Fiber* f) noexcept {
  if (!resuming_ || f->pinned) {
    push_ready(f, false);
    return;
  }
  if (next_) {
    push_ready(f, false);  // a burst of wakes keeps its order: the first is next
  } else {
    next_ = f;
    next_inherits_ = concluding_;
  }
}

void Worker::run_next(Fiber* f) noexcept {
  if (Fiber* older = std::exchange(next_, f)) push_ready(older, false);
  next_inherits_ = true;
}

void Worker::suspend(Fiber* f, Suspend& s) noexcept {
  s.fiber = f;
  Worker* w = current_worker();
  w->save_eh(f);
  if (Fiber* next = w->take_handoff(false)) {
    w->arriving_ = &s;
    w->enter(next);
    fiber::switch_context(*f->context, *next->context, nullptr);
  } else {
    fiber::switch_context(*f->context, w->context_, &s);
  }
  // Resumed, perhaps on another worker: a thread-local read after the switch.
  current_worker()->arrive(f);
}

void Worker::exit(Fiber* f) noexcept {
  Worker* w = current_worker();
  w->conclude(f);
  Suspend& s = w->exiting_;
  s = Suspend{};
  s.fiber = f;
  s.kind = Suspend::Kind::kExit;
  if (Fiber* next = w->take_handoff(true)) {
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

Fiber* Worker::take_handoff(bool may_map) noexcept {
  // Only work already on this worker: the worker loop looks further.
  if (turns_left_ <= 0 || !ready_here()) return nullptr;
  Fiber* next = next_fiber();
  if (!next || next->started) return next;
  // A new fiber needs a stack. A parking fiber may hold a wait queue's lock
  // until its switch completes, so then only a cached stack will do (the pool
  // may block in a system call, or fail); an exiting fiber holds none. If
  // there is no stack, the worker loop starts the fiber: it goes back into
  // the next-fiber slot, and goes first.
  fiber::Stack stack;
  if (may_map || stacks_.cached() > 0) {
    try {
      stack = stacks_.allocate();
    } catch (...) {
    }
  }
  if (!stack) {
    next_ = next;
    next_restored_ = true;
    return nullptr;
  }
  start(next, stack);
  return next;
}

void Worker::enter(Fiber* f) noexcept {
  current_ = f;
  load_eh(f);
  stall_probe_.begin_turn();
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
  stall_probe_.end_turn();
  switch (s.kind) {
    case Suspend::Kind::kYield:
      push_ready(s.fiber, false);
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
    f->timer_owner = this;
  } else {
    f->timer_owner = nullptr;
  }
  if (kind == ParkKind::kIo) f->io_owner.store(this, std::memory_order_relaxed);
  // Arming and the abort check are one seq_cst read-modify-write of the word,
  // and Fiber::on_abort sets its flag with another: an abort that comes first
  // keeps an interruptible park from being armed, one that comes after finds
  // it armed and claims it. Once armed, the fiber may be woken, run elsewhere
  // and be freed at any moment: nothing below reads it on that path.
  std::uint64_t w = f->wake_word.load(std::memory_order_relaxed);
  for (;;) {
    const std::uint64_t flag = w & kParkAborted;
    if (flag && kind == ParkKind::kInterruptible) break;
    if (f->wake_word.compare_exchange_weak(w, park_word(epoch, kind) | flag,
                                           std::memory_order_seq_cst, std::memory_order_relaxed)) {
      if (publish) publish(arg);
      return;
    }
  }
  // Aborted before it parked: never armed, so no other waker can claim it.
  if (publish) publish(arg);
  f->wake_reason = WakeReason::kAborted;
  if (f->timer_owner) f->timer_owner->note_timer_stale();
  scheduler_.schedule_woken(f);
}

void Worker::conclude(Fiber* f) noexcept {
  const Task::Outcome outcome = f->exit_outcome;
  std::exception_ptr error = std::move(f->exit_error);
  if (outcome == Task::Outcome::kException && !f->root) {
    scheduler_.task_failed(fmt::format("fiber {}{}{}{}", f->id, f->name.empty() ? "" : " '",
                                       f->name, f->name.empty() ? "" : "'"),
                           error);
  }
  // Before the finish: a joiner that scrapes sees the task no longer running.
  if (TaskRecord* r = f->record)
    count_task_finish(r, kind_ == Kind::kPool ? index_ : r->shared_slot);
  // The cascade (everything this fiber spawned is aborted, and its own node
  // closes to further spawns), then the outcome.
  concluding_ = true;  // the fiber woken first continues this thread of control
  f->close_and_finish(outcome, std::move(error));
  concluding_ = false;
  if (f->root) scheduler_.begin_shutdown();
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
  if (scheduler_.closing()) scheduler_.workers[0]->unpark();
  scheduler_.count_finish();
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

Fiber* Worker::take_global() noexcept {
  const std::size_t len = scheduler_.global.len();
  if (len == 0) return nullptr;
  // No more than would fill the run queue to half.
  const std::size_t room = (RunQueue<Fiber>::kCapacity - run_queue_.len()) / 2;
  const std::size_t want =
      std::min(GlobalQueue::share(len, scheduler_.workers.size()), std::max<std::size_t>(room, 1));
  std::array<Fiber*, GlobalQueue::kMaxShare> batch;
  const std::size_t n = scheduler_.global.take(batch.data(), want);
  if (n == 0) return nullptr;
  for (std::size_t i = 1; i < n; ++i) push_ready(batch[i], false);
  if (run_queue_.is_stealable()) scheduler_.notify_parked();  // once for the batch
  if (Fiber* f = take_entry(batch[0])) return f;
  return pop_local();
}

Fiber* Worker::next_fiber() noexcept {
  if (next_) {
    const bool inherits = std::exchange(next_inherits_, false);
    std::uint32_t& runs = inherits ? inherited_runs_ : next_runs_;
    if (std::exchange(next_restored_, false) ||
        ++runs <= (inherits ? kInheritedRunBudget : kNextRunBudget) ||
        (!inherits && streak_has_time())) {
      return std::exchange(next_, nullptr);
    }
    push_ready(std::exchange(next_, nullptr), false);
  }
  next_runs_ = 0;
  inherited_runs_ = 0;
  overtime_ = 0;
  if (--global_countdown_ == 0) {
    global_countdown_ = scheduler_.config.global_queue_interval;
    if (kind_ == Kind::kPool) {
      if (Fiber* f = take_global()) return f;
    }
  }
  // Alternate which ready list goes first so neither starves the other.
  if (global_countdown_ & 1) {
    if (Fiber* f = pinned_ready_.pop()) return f;
    if (Fiber* f = pop_local()) return f;
  } else {
    if (Fiber* f = pop_local()) return f;
    if (Fiber* f = pinned_ready_.pop()) return f;
  }
  return kind_ == Kind::kPool ? take_global() : nullptr;
}

bool Worker::streak_has_time() noexcept {
  const std::uint32_t n = overtime_++;
  if (n % kStreakCheck != 0) return true;
  const Deadline now = Clock::now();
  if (n == 0) {
    overtime_start_ = now;
    return true;
  }
  return now - overtime_start_ < kStreakSlice;
}

Fiber* Worker::pop_local() noexcept {
  for (;;) {
    if (claimed_next_ == claimed_end_) {
      claimed_next_ = 0;
      claimed_end_ = run_queue_.pop_batch(claimed_.data(), claimed_.size());
      if (claimed_end_ == 0) return nullptr;
    }
    if (Fiber* f = take_entry(claimed_[claimed_next_++])) return f;
  }
}

void Worker::run_batch() noexcept {
  batch_ms_ = coarse_now_ms();
  turns_left_ = kBatch;
  while (turns_left_ > 0) {
    Fiber* f = next_fiber();
    if (!f) return;
    resume(f);
  }
}

Fiber* Worker::search() noexcept {
  if (kind_ != Kind::kPool) return nullptr;
  const std::size_t n = scheduler_.workers.size();
  if (!searching_) {
    if (n == 1 || !scheduler_.idle.try_begin_search()) return nullptr;
    searching_ = true;
  }
  Fiber* f = nullptr;
  rng_ ^= rng_ << 13;
  rng_ ^= rng_ >> 7;
  rng_ ^= rng_ << 17;
  const std::size_t start = rng_ % n;
  // A due watch also takes a fiber queued alone behind a turn that has lasted
  // it, and sets the next watch's length.
  const bool due = std::exchange(watch_due_, false);
  bool queued = false;
  for (std::size_t i = 0; i < n && !f; ++i) {
    Worker* victim = scheduler_.workers[(start + i) % n];
    if (victim == this) continue;
    RunQueue<Fiber>& q = victim->run_queue();
    queued = queued || (due && !q.empty());
    f = q.steal_into(run_queue_, due && stuck_since_watch(*victim));
  }
  if (due) {
    watch_start_ = {};
    watch_interval_ = queued || f
                          ? std::chrono::nanoseconds(kWatchMin)
                          : std::min<std::chrono::nanoseconds>(2 * watch_interval_, kWatchMax);
  }
  if (f) {
    stats_->add(Stat::kSteals, 1);
    if (!(f = take_entry(f))) f = pop_local();
  }
  if (!f) f = take_global();
  searching_ = false;
  const bool last = scheduler_.idle.end_search();
  // The last searcher to find work passes the search on if there is more
  // (and only then: a lone wake must not pay for a second worker's wake-up).
  if (f && last && more_work_to_find()) scheduler_.notify_parked();
  return f;
}

bool Worker::more_work_to_find() const noexcept {
  // seq_cst after end_search(): a pusher that saw this worker still searching
  // (and so woke nobody) published its work before that; it is seen here.
  full_fence();
  if (local_ready() || !scheduler_.global.empty()) return true;
  for (Worker* w : scheduler_.workers) {
    if (w != this && w->run_queue().is_stealable()) return true;
  }
  return false;
}

void Worker::apply_mail() noexcept {
  mailbox_.take(mail_);
  for (const MailMessage& m : mail_) {
    switch (m.kind) {
      case MailMessage::Kind::kResume:
        pinned_ready_.push(m.fiber);
        break;
      case MailMessage::Kind::kCancelIo:
        cancel_io(*this, m.fiber, m.epoch);
        m.fiber->unref();
        break;
    }
  }
  mail_.clear();
}

std::size_t Worker::completion_budget() const noexcept {
  const std::size_t queued = run_queue_.len();
  const std::size_t room =
      queued < RunQueue<Fiber>::kCapacity ? RunQueue<Fiber>::kCapacity - queued : 0;
  return std::max(room, kMinCompletions);
}

void Worker::service() noexcept {
  ring_.service(completion_budget());
  // Mirrored for scrapes on other threads (the ring is this thread's alone).
  stats_->set(Stat::kPendingOperations, ring_.pending());
  if (timers_.size() != 0 || !wheel_.empty()) {
    const Deadline now = Clock::now();
    timers_.expire(
        now, [](Fiber* f, std::uint64_t epoch) { wake_fiber(f, epoch, WakeReason::kTimedOut); });
    wheel_.advance(now, [](WheelEntry* e) { on_io_deadline(e); });
  }
  apply_mail();
}

bool Worker::quit() const noexcept {
  if (kind_ == Kind::kDedicated) return dedicated_done_;
  return scheduler_.shutdown_complete();
}

bool Worker::has_work_anywhere() const noexcept {
  if (ready_here() || !mailbox_.empty() || quit() || scheduler_.roster.pause_requested()) {
    return true;
  }
  if (kind_ == Kind::kPool) {
    if (!scheduler_.global.empty()) return true;
    for (Worker* w : scheduler_.workers) {
      if (w != this && w->run_queue().is_stealable()) return true;
    }
    if (index_ == 0 && scheduler_.closing() && scheduler_.live_fibers() == 0) return true;
  }
  return false;
}

bool Worker::begin_watch() noexcept {
  if (kind_ != Kind::kPool || scheduler_.workers.size() == 1) return false;
  IdleSet& idle = scheduler_.idle;
  if (!idle.try_watch()) return false;
  if (!idle.others_awake(index_)) {
    idle.end_watch();
    // A worker that woke before the give-back saw the watch held: look again.
    if (!idle.others_awake(index_) || !idle.try_watch()) return false;
  }
  watching_ = true;
  if (watch_start_ == Deadline{}) {
    for (Worker* w : scheduler_.workers) {
      // relaxed: a turn count is a hint; a stale one delays a steal by a watch.
      watch_turns_[w->index()] = w->stall_probe().turns.load(std::memory_order_relaxed);
    }
    watch_start_ = Clock::now();
  }
  return true;
}

void Worker::end_watch() noexcept {
  if (!std::exchange(watching_, false)) return;
  scheduler_.idle.end_watch();
  watch_due_ = Clock::now() - watch_start_ >= watch_interval_;
}

bool Worker::stuck_since_watch(Worker& victim) const noexcept {
  // relaxed: see begin_watch(). Odd: inside a fiber's turn.
  const std::uint64_t turns = victim.stall_probe().turns.load(std::memory_order_relaxed);
  return (turns & 1) != 0 && turns == watch_turns_[victim.index()];
}

std::optional<std::chrono::nanoseconds> Worker::park_timeout() const noexcept {
  std::optional<Deadline> next = timers_.next();
  if (auto w = wheel_.next_deadline(); w && (!next || *w < *next)) next = w;
  const Deadline now = Clock::now();
  if (index_ == 0 && kind_ == Kind::kPool && scheduler_.closing()) {
    if (!next || *next > now + kShutdownPoll) next = now + kShutdownPoll;
  }
  if (!next) return std::nullopt;
  return std::max<std::chrono::nanoseconds>(*next - now, std::chrono::nanoseconds::zero());
}

void Worker::park() noexcept {
  release_retired();
  auto timeout = park_timeout();
  Fiber* const expecting = std::exchange(expecting_fiber_, nullptr);
  parker_.clear();
  if (kind_ == Kind::kPool) scheduler_.idle.set_idle(index_);
  full_fence();
  if (!has_work_anywhere()) {
    stats_->add(Stat::kWorkerParks, 1);
    if (begin_watch()) {
      const auto left = std::max<std::chrono::nanoseconds>(
          watch_start_ + watch_interval_ - Clock::now(), std::chrono::nanoseconds::zero());
      if (!timeout || left < *timeout) timeout = left;
    }
    if (ring_.pending() > 0) {
      // I/O in flight: block in the ring, so completions end the wait too.
      std::size_t completions = 1;
      if (expecting != nullptr) {
        const auto left = std::max<std::chrono::nanoseconds>(expected_by_ - Clock::now(),
                                                             std::chrono::nanoseconds::zero());
        if (!timeout || left < *timeout) timeout = left;
        completions = expected_completions_;
      }
      wake_source_.arm(ring_);
      if (parker_.arm_eventfd()) {
        ring_.wait(timeout, completions, completion_budget());
        parker_.disarm();
      }
      wake_source_.consume();
    } else if (!spinner_.spin([this] { return parker_.signalled(); })) {
      const auto slept = parker_.park(timeout);
      if (slept.count() > 0) spinner_.on_wake(slept);
    }
    end_watch();
  }
  // A pusher that claimed our idle bit counted us as a searcher.
  if (kind_ == Kind::kPool && !scheduler_.idle.clear_idle(index_)) searching_ = true;
}

void Worker::run_pool() {
  scheduler_.roster.join(this);
  for (;;) {
    scheduler_.roster.hold_if_requested(this);
    run_batch();
    service();
    if (ready_here()) continue;
    if (index_ == 0 && scheduler_.closing() && scheduler_.live_fibers() == 0) {
      scheduler_.complete_shutdown();
    }
    if (quit()) break;
    if (Fiber* f = search()) {
      resume(f);
      continue;
    }
    park();
    if (searching_) {
      if (Fiber* f = search()) resume(f);
    }
  }
  release_retired();
  scheduler_.roster.leave(this);
}

void Worker::run_dedicated(Fiber* root) {
  dedicated_root_ = root;
  root->pinned = this;
  pinned_ready_.push(root);
  scheduler_.roster.join(this);
  while (!dedicated_done_) {
    scheduler_.roster.hold_if_requested(this);
    run_batch();
    service();
    if (!pinned_ready_.empty() || dedicated_done_) continue;
    park();
  }
  release_retired();
  scheduler_.roster.leave(this);
}

bool wake_fiber(Fiber* f, std::uint64_t epoch, WakeReason reason) noexcept {
  // acquire; pairs with the seq_cst arm in Worker::after_park.
  std::uint64_t w = f->wake_word.load(std::memory_order_acquire);
  for (;;) {
    if (park_epoch(w) != epoch) return false;
    const ParkKind kind = park_kind(w);
    if (kind == ParkKind::kNone || kind == ParkKind::kIo) return false;
    if (reason == WakeReason::kAborted && kind != ParkKind::kInterruptible) return false;
    if (f->wake_word.compare_exchange_weak(w, (w & ~kParkKindMask), std::memory_order_acq_rel,
                                           std::memory_order_acquire)) {
      break;
    }
  }
  f->wake_reason = reason;
  if (reason != WakeReason::kTimedOut && f->timer_owner) f->timer_owner->note_timer_stale();
  f->scheduler().schedule_woken(f);
  return true;
}

void Fiber::on_abort() noexcept { deliver_abort(); }

void Fiber::expedite() noexcept {
  // relaxed: a hint; the exchange below decides.
  if (!claimable.load(std::memory_order_relaxed)) return;
  Worker* w = current_worker();
  if (!w || !w->current() || w->kind() != Worker::Kind::kPool || &w->scheduler() != scheduler_)
    return;
  ref();  // the spawn entry's, dropped by whoever takes it (take_entry)
  // acq_rel: the winner of the claim, here or in take_entry(), runs the fiber.
  if (!claimable.exchange(false, std::memory_order_acq_rel)) {
    unref();
    return;
  }
  w->run_next(this);
}

void Fiber::deliver_abort() noexcept {
  // seq_cst; the mirror of the arming in Worker::after_park.
  const std::uint64_t w = wake_word.fetch_or(kParkAborted, std::memory_order_seq_cst);
  switch (park_kind(w)) {
    case ParkKind::kInterruptible:
      wake_fiber(this, park_epoch(w), WakeReason::kAborted);
      break;
    case ParkKind::kIo: {
      Worker* owner = io_owner.load(std::memory_order_relaxed);
      ref();  // released by the owner after it handles the message
      owner->send({MailMessage::Kind::kCancelIo, this, park_epoch(w)});
      break;
    }
    case ParkKind::kNone:
    case ParkKind::kUninterruptible:
      break;
  }
}

}  // namespace spindle::detail
