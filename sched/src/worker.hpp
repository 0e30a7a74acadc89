// Worker: one thread running fibers: its run queue, ring, timers, mailbox,
// stack cache and idle spinner.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "block_cache.hpp"
#include "mailbox.hpp"
#include "metrics.hpp"
#include "parker.hpp"
#include "run_queue.hpp"
#include "spindle/fiber/context.hpp"
#include "spindle/fiber/stack.hpp"
#include "spindle/sched/detail/fiber.hpp"
#include "spindle/uring/ring.hpp"
#include "spindle/uring/wake_source.hpp"
#include "spinner.hpp"
#include "stall_detector.hpp"
#include "timeout_wheel.hpp"
#include "timer_heap.hpp"

namespace spindle::detail {

class Scheduler;

// libstdc++'s per-thread exception-handling globals (unwind-cxx.h). A fiber
// that parks inside a catch block and resumes on another thread takes its
// caught-exception stack with it.
struct EhGlobals {
  void* caught;
  unsigned int uncaught;
};

// What a fiber hands over when it switches away: to its worker's loop, or
// straight to the next fiber, which completes the switch (Worker::arrive).
// Lives on the fiber's stack (an exit's in its worker); it is read before the
// fiber can be resumed again.
struct Suspend {
  enum class Kind : std::uint8_t { kYield, kPark, kExit };
  Fiber* fiber = nullptr;  // the fiber switching away
  Kind kind = Kind::kYield;
  ParkKind park = ParkKind::kNone;
  Deadline deadline = kNoDeadline;
  // Runs on the worker after the fiber's context is saved and its park word
  // armed: makes the fiber findable by its wakers (e.g. unlocks a wait queue,
  // submits an SQE).
  void (*publish)(void* arg) = nullptr;
  void* arg = nullptr;
};

// A FIFO of ready fibers linked through Fiber::next. Not thread-safe.
class FiberList {
 public:
  bool empty() const noexcept { return head_ == nullptr; }
  void push(Fiber* f) noexcept {
    f->next = nullptr;
    if (tail_) {
      tail_->next = f;
    } else {
      head_ = f;
    }
    tail_ = f;
  }
  Fiber* pop() noexcept {
    Fiber* f = head_;
    if (f) {
      head_ = f->next;
      if (!head_) tail_ = nullptr;
      f->next = nullptr;
    }
    return f;
  }

 private:
  Fiber* head_ = nullptr;
  Fiber* tail_ = nullptr;
};

// Worker-affine except where marked "any thread". A pool worker takes part
// in stealing and the idle set; a dedicated worker runs only the fibers
// pinned to it (its root) and sends everything else to the pool.
class Worker {
 public:
  enum class Kind : std::uint8_t { kPool, kDedicated };

  // Must run on the worker's own thread: the ring is single-issuer.
  Worker(Scheduler& scheduler, Kind kind, std::size_t index);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Pool worker: runs until shutdown completes.
  void run_pool();
  // Dedicated worker: runs `root` (pinned here) until it exits.
  void run_dedicated(Fiber* root);

  // Makes entry `e` (a ready fiber or a spawn entry, spawn_entry.hpp) ready
  // on this worker: the run queue for an ordinary fiber, the private pinned
  // list for one pinned here. `is_new` is true for a spawn, which must reach
  // a parked worker (the fenced handshake); false for a fiber this worker
  // would run anyway (a yield, a wake or an I/O completion handled here, a
  // batch from the global queue), which wakes one only if it sees it idle
  // without a fence.
  void push_ready(Fiber* e, bool is_new = true) noexcept;
  // Makes `f` ready for a wake: into the next-fiber slot when the wake comes
  // from a fiber running here (or its exit), so a fiber handing work to a
  // parked one is followed by it while both stacks are hot; push_ready()
  // otherwise. The slot is private to this worker (never stolen) and holds the
  // first such wake; later ones go to the run queue behind it.
  void push_woken(Fiber* f) noexcept;
  // Makes `f`, whose start a joiner running here just claimed, the next fiber
  // to run here (Fiber::expedite). A fiber already in the slot goes to the
  // run queue.
  void run_next(Fiber* f) noexcept;

  // Suspends the running fiber `f` with `s`; returns when it is resumed (on
  // whatever worker). Called on the fiber. Switches straight to the next
  // ready fiber when there is one within the turn budget (no detour through
  // the worker's own stack), else to the worker loop.
  static void suspend(Fiber* f, Suspend& s) noexcept;
  // Ends the running fiber; never returns. Called on the fiber.
  [[noreturn]] static void exit(Fiber* f) noexcept;
  // First thing on a fiber's stack after a switch to it (a resume or its
  // start): completes the switch of the fiber that handed over to `self`, if
  // one did. Called on the fiber.
  void arrive(Fiber* self) noexcept;

  Scheduler& scheduler() const noexcept { return scheduler_; }
  Kind kind() const noexcept { return kind_; }
  std::size_t index() const noexcept { return index_; }
  Fiber* current() const noexcept { return current_; }
  uring::Ring& ring() noexcept { return ring_; }
  TimeoutWheel& wheel() noexcept { return wheel_; }

  // Any thread.
  void unpark() noexcept { parker_.unpark(); }
  void send(const MailMessage& m) noexcept { mailbox_.send(m); }
  RunQueue<Fiber>& run_queue() noexcept { return run_queue_; }

  // Fibers spawned and finished here (pool workers only), read by any thread
  // for the live count. Written only by this worker.
  std::atomic<std::uint64_t> spawned{0};
  std::atomic<std::uint64_t> finished{0};

  // Fiber ids handed out by this worker come from a private block.
  std::uint64_t allocate_id() noexcept;

  // This worker's runtime counters (metrics.hpp): written only here.
  StatSlot& stats() noexcept { return *stats_; }
  // The task record of (name, execution, kind) through a small cache keyed by
  // the name's content, so most spawns take no lock. Pool workers only.
  TaskRecord* task_record(std::string_view name, Execution execution, TaskKind kind) {
    for (TaskRecord* r : records_) {
      if (r && r->matches(name, execution, kind)) return r;
    }
    return intern_record(name, execution, kind);
  }

  // coarse_now_ms() as of the start of the current batch of fiber turns.
  std::uint64_t batch_ms() const noexcept { return batch_ms_; }

  // Fiber control blocks allocated and freed on this worker.
  BlockCache& blocks() noexcept { return blocks_; }

  // this_fiber::expect_completions() for `f`, the fiber running here: the
  // next park with I/O in flight waits for `count` completions, until
  // `deadline` at the latest. Lapses when the worker parks or `f` resumes here.
  void expect_completions(Fiber* f, std::size_t count, Deadline deadline) noexcept {
    expecting_fiber_ = f;
    expected_completions_ = count;
    expected_by_ = deadline;
  }

  // Any thread: a park with a timer here ended another way.
  void note_timer_stale() noexcept { timers_.note_stale(); }

  // Read by the stall detector (any thread) and this worker's signal handler.
  StallProbe& stall_probe() noexcept { return stall_probe_; }

 private:
  TaskRecord* intern_record(std::string_view name, Execution execution, TaskKind kind);
  void resume(Fiber* f) noexcept;
  void resume_one(Fiber* f) noexcept;
  void start(Fiber* f, fiber::Stack stack) noexcept;
  // The fiber to switch to straight from the suspending one, started, or null
  // (back to the worker loop). `may_map`: the stack may come from the pool.
  Fiber* take_handoff(bool may_map) noexcept;
  void enter(Fiber* f) noexcept;
  void save_eh(Fiber* f) noexcept;
  void load_eh(const Fiber* f) noexcept;
  void complete_switch(const Suspend& s) noexcept;
  void after_park(Fiber* f, const Suspend& s) noexcept;
  // Publishes the outcome of the ended fiber `f` and wakes its joiners: on
  // its own stack before it switches away, so that a joiner woken here can be
  // the fiber it hands over to.
  void conclude(Fiber* f) noexcept;
  // Frees the stack of the concluded fiber `f`, which has switched away, and
  // counts it finished.
  void retire(Fiber* f) noexcept;
  // Detaches the retired fibers from their parents and drops the worker's
  // references on them.
  void release_retired() noexcept;
  void run_batch() noexcept;
  Fiber* next_fiber() noexcept;
  // Counts one more woken fiber taken from the next-fiber slot past the
  // streak's budget; false once the streak has had its time (kStreakSlice,
  // worker.cpp).
  bool streak_has_time() noexcept;
  // The next fiber of the claimed batch or the run queue, skipping spawn
  // entries whose fibers a joiner claimed.
  Fiber* pop_local() noexcept;
  bool local_ready() const noexcept { return claimed_next_ != claimed_end_ || !run_queue_.empty(); }
  // A fiber is ready on this worker: in the next-fiber slot, the run queue
  // (or its claimed part) or the pinned list.
  bool ready_here() const noexcept { return next_ || local_ready() || !pinned_ready_.empty(); }
  Fiber* take_global() noexcept;
  Fiber* search() noexcept;
  bool more_work_to_find() const noexcept;
  void service() noexcept;
  // The most completions one ring service may dispatch (kMinCompletions).
  std::size_t completion_budget() const noexcept;
  void apply_mail() noexcept;
  bool has_work_anywhere() const noexcept;
  // Parking: claims the watch (idle_set.hpp) if another pool worker is awake
  // and no parked one holds it; false otherwise.
  bool begin_watch() noexcept;
  void end_watch() noexcept;
  // Whether `victim` has stayed in one fiber's turn since the watch began.
  bool stuck_since_watch(Worker& victim) const noexcept;
  void park() noexcept;
  std::optional<std::chrono::nanoseconds> park_timeout() const noexcept;
  bool quit() const noexcept;

  Scheduler& scheduler_;
  BlockCache blocks_;
  const Kind kind_;
  const std::size_t index_;
  fiber::Context context_;  // this thread's own stack, where the loop runs
  Fiber* current_ = nullptr;
  bool resuming_ = false;        // inside resume(): wakes may use next_
  int turns_left_ = 0;           // fiber turns left in this batch (resumes and hand-overs)
  Suspend* arriving_ = nullptr;  // the hand-over in progress, for arrive()
  // An exiting fiber's hand-over: not on its stack, which exit_to() abandons
  // (and ASan's fake stack with it) before the side taking over reads it.
  // Read by that side, on this worker, before the next exit here.
  Suspend exiting_;
  Fiber* next_ = nullptr;             // the next-fiber slot (push_woken, run_next)
  bool next_inherits_ = false;        // next_ continues the last fiber's thread of control
  bool next_restored_ = false;        // next_ was put back by take_handoff: it goes first
  bool concluding_ = false;           // inside conclude()'s cascade and finish: wakes inherit
  std::uint32_t next_runs_ = 0;       // fibers taken from next_ in a row, not inheriting
  std::uint32_t inherited_runs_ = 0;  // ... inheriting
  std::uint32_t overtime_ = 0;        // ... past the budget of wakes
  Deadline overtime_start_{};         // when the first fiber past the budget was taken
  RunQueue<Fiber> run_queue_;
  // The oldest fibers of run_queue_, claimed together by one pop_batch() so
  // most pops take no atomic read-modify-write; not stealable, run first.
  std::array<Fiber*, 8> claimed_{};
  std::uint32_t claimed_next_ = 0;
  std::uint32_t claimed_end_ = 0;
  FiberList pinned_ready_;
  uring::WakeSource wake_source_;
  uring::Ring ring_;
  Parker parker_;
  Mailbox mailbox_;
  std::vector<MailMessage> mail_;  // scratch for apply_mail()
  TimerHeap timers_;
  TimeoutWheel wheel_;
  fiber::StackCache stacks_;
  Spinner spinner_;
  std::uint32_t global_countdown_;  // picks until the global queue goes first
  std::uint64_t rng_;
  bool searching_ = false;  // this worker holds a search count
  bool watching_ = false;   // this worker holds the watch (only while parked)
  bool watch_due_ = false;  // the watch has lasted watch_interval_: search() checks it
  // When the pool workers' turns were recorded in watch_turns_ (by index); the
  // epoch when there is no record.
  Deadline watch_start_{};
  std::chrono::nanoseconds watch_interval_;
  std::array<std::uint64_t, 64> watch_turns_{};
  // expect_completions(): the fiber that asked (null: none), and its hint.
  Fiber* expecting_fiber_ = nullptr;
  std::size_t expected_completions_ = 0;
  Deadline expected_by_{};
  Fiber* dedicated_root_ = nullptr;
  bool dedicated_done_ = false;
  std::uint64_t id_next_ = 0;
  std::uint64_t id_end_ = 0;
  EhGlobals* const eh_;  // this thread's, fixed for its lifetime
  StallProbe stall_probe_;
  StatSlot* stats_ = nullptr;             // a pool worker's slot, or a dedicated one until ~Worker
  std::array<TaskRecord*, 4> records_{};  // task_record()'s cache
  std::uint32_t records_next_ = 0;        // the cache entry replaced next
  std::uint64_t batch_ms_ = 0;
  // Ended fibers not yet detached, each with the worker's reference: detaching
  // a batch takes each parent's lock once, not once per child. Emptied when
  // full, before the worker parks, and when its loop ends.
  std::array<Node*, 32> retired_{};
  std::uint32_t retired_count_ = 0;
};

// The worker on this thread, or null. Never inlined (see current_fiber()).
Worker* current_worker() noexcept;

// Claims the park `epoch` of `f` for `reason` (only kinds that `reason` may
// end) and makes it ready. Returns false if the park already ended or was
// not of such a kind. Any thread.
bool wake_fiber(Fiber* f, std::uint64_t epoch, WakeReason reason) noexcept;

// Destroys the running fiber's FiberLocal values (on its own stack, at exit).
void destroy_fiber_locals(Fiber* f) noexcept;

}  // namespace spindle::detail
