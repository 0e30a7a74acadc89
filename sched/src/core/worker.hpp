// Worker: one thread running fibers: its run queue and next-fiber slot, I/O
// backend, timers, stack cache, idle spinner and watch. Its thread-shared part is
// WorkerRemote (worker_remote.hpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/block_cache.hpp"
#include "core/idle_watch.hpp"
#include "core/io_backend.hpp"
#include "core/metrics.hpp"
#include "core/next_slot.hpp"
#include "core/worker_remote.hpp"
#include "park/event_fd.hpp"
#include "park/spinner.hpp"
#include "spindle/base/intrusive_list.hpp"
#include "spindle/fiber/context.hpp"
#include "spindle/fiber/stack.hpp"
#include "spindle/sched/detail/fiber.hpp"
#include "time/timeout_wheel.hpp"
#include "time/timer_heap.hpp"

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
  // starts an I/O operation).
  void (*publish)(void* arg) = nullptr;
  void* arg = nullptr;
};

// Worker-affine: every member is its own thread's, except those of remote()
// (worker_remote.hpp), which other threads reach through a WorkerRemote*. A
// pool worker takes part in stealing and the idle set; a dedicated worker
// runs only the fibers pinned to it (its root) and sends everything else to
// the pool.
//
// Making a fiber runnable here is a put_* call and taking the next one a
// take_* call; Scheduler::put_* chooses the worker.
class Worker {
 public:
  // Must run on the worker's own thread, which its I/O backend belongs to.
  Worker(Scheduler& scheduler, Placement placement, std::size_t index);
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;

  // Pool worker: runs until shutdown completes.
  void run_pool();
  // Dedicated worker: runs `root` (pinned here) until it exits.
  void run_dedicated(Fiber* root);

  // A spawn entry (or the root) into the run queue; a parked worker is woken
  // to steal it by the fenced handshake (idle_set.hpp).
  void put_new(ReadyEntry* e) noexcept;
  // A fiber this worker would run anyway (a yield, a wake or completion
  // handled here, a share of the global queue): into the pinned list if it
  // is pinned here, else the run queue; wakes a parked worker only if it
  // sees one idle without a fence.
  void put(Fiber* f) noexcept;
  // A woken fiber: into the next-fiber slot if the wake comes from a fiber
  // running here (or its exit) and the slot is free, so a fiber handing work
  // to a parked one is followed by it while both stacks are hot; put()
  // otherwise, so a burst of wakes keeps its order.
  void put_woken(Fiber* f) noexcept;
  // `f`, whose start a joiner running here just claimed (Fiber::expedite):
  // the next fiber to run here. A fiber already in the slot goes to put().
  void put_next(Fiber* f) noexcept;

  // Suspends the running fiber `f` with `s`; returns when it is resumed (on
  // whatever worker). Called on the fiber. Switches straight to the next
  // ready fiber when there is one within the batch (no detour through the
  // worker's own stack), else to the worker loop.
  static void suspend(Fiber* f, Suspend& s) noexcept;
  // Whether the running fiber may have its next I/O operation completed
  // within its own turn, without switching away (UringDriver's in-turn
  // completion): nothing else is ready here or in the mailbox (or, for a
  // pool worker, the global queue), and the batch has a turn left. Takes
  // that turn: the stall probe and the batch count it as one, so the loop's
  // service of timers and mail comes as soon as after kBatch fiber turns.
  bool take_io_turn() noexcept;
  // The I/O backend's service() from within the running fiber's turn: the
  // fibers it completes queue as they do from the worker loop's service.
  void service_io_in_turn() noexcept;
  // Ends the running fiber; never returns. Called on the fiber.
  [[noreturn]] static void exit(Fiber* f) noexcept;
  // First thing on a fiber's stack after a switch to it (a resume or its
  // start): completes the switch of the fiber that handed over to `self`, if
  // one did. Called on the fiber.
  void arrive(Fiber* self) noexcept;

  WorkerRemote& remote() noexcept { return remote_; }
  Scheduler& scheduler() const noexcept { return remote_.scheduler(); }
  Placement placement() const noexcept { return remote_.placement(); }
  std::size_t index() const noexcept { return remote_.index(); }
  Fiber* current() const noexcept { return current_; }
  IoBackend& io() noexcept { return *io_; }
  TimeoutWheel& wheel() noexcept { return wheel_; }

  // Fiber ids handed out by this worker come from a private block.
  std::uint64_t allocate_id() noexcept;

  // This worker's runtime counters (metrics.hpp): written only here.
  StatSlot& stats() noexcept { return *stats_; }
  // The task record of (name, execution, kind) through a small cache keyed by
  // the name's content, so most spawns take no lock. Pool workers only.
  TaskRecord* task_record(std::string_view name, Placement execution, TaskKind kind) {
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

 private:
  // Where a hand-over may find a stack for a fiber that has not started.
  enum class StackSource : std::uint8_t {
    kCache,  // a parking fiber may hold a wait queue's lock: no system call
    kPool,   // an exiting fiber holds none: the pool may map one
  };

  TaskRecord* intern_record(std::string_view name, Placement execution, TaskKind kind);
  // The run queue, overflowing half of it to the global queue when full.
  void put_queue(ReadyEntry* e) noexcept;
  // After put_queue(): whether the run queue is worth a parked worker's
  // wake to steal from it. When it is not, wakes one to watch if none does.
  inline bool stealable_after_put() noexcept;
  // put_queue(), then a parked worker woken only if one is seen idle without
  // a fence (put() of an unpinned fiber, a share of the global queue).
  void put_ready(ReadyEntry* e) noexcept;
  void resume(Fiber* f) noexcept;
  void resume_one(Fiber* f) noexcept;
  void start(Fiber* f, fiber::Stack stack) noexcept;
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
  // Runs up to kBatch fibers; whether it ran any.
  bool run_batch() noexcept;

  // The fiber to switch to straight from the suspending one, started, or null
  // (back to the worker loop): only work already on this worker.
  Fiber* take_handoff(StackSource source) noexcept;
  // The next fiber to run here: the next-fiber slot while its streak has
  // budget, then (alternating) the pinned list and the run queue, with the
  // global queue first every Config::global_queue_interval picks.
  Fiber* take_next() noexcept;
  // The next fiber of the claimed batch or the run queue, skipping spawn
  // entries whose fibers a joiner claimed.
  Fiber* take_local() noexcept;
  // After take_local() took a fiber from the claimed batch: asks the CPU for
  // the control block of the fiber after next and, if the next one parked on
  // I/O, for the top of its stack. Such a fiber has been off the CPU while
  // many others and the kernel ran, so those lines have left the caches;
  // fetched while the current fiber runs, its resume does not wait for them.
  // A fiber that yielded or parked on a primitive is usually still cached,
  // and is left alone.
  void prefetch_ahead() const noexcept;
  // A share of the global queue (pool workers): the first to run, the rest
  // into the run queue.
  Fiber* take_global() noexcept;
  // Half of another pool worker's run queue (the search), or the global queue.
  Fiber* take_stolen() noexcept;
  bool local_ready() const noexcept {
    return claimed_next_ != claimed_end_ || !remote_.run_queue_.empty();
  }
  // A fiber is ready on this worker: in the next-fiber slot, the run queue
  // (or its claimed part) or the pinned list.
  bool ready_here() const noexcept {
    return !next_.empty() || local_ready() || !pinned_ready_.empty() || !sim_ready_.empty();
  }
  bool more_work_to_find() const noexcept;
  // After a service that found work for an idle worker: if it made one
  // fiber ready and nothing else is, and another worker spins idle on I/O,
  // hands the fiber to that worker (by mail).
  void pass_lone_fiber() noexcept;
  void service() noexcept;
  // The most completions one I/O service may dispatch (kMinCompletions).
  std::size_t completion_budget() const noexcept;
  void apply_mail() noexcept;
  bool has_work_anywhere() const noexcept;
  void park() noexcept;
  // A simulation's take_next(): every fiber ready here moves into sim_ready_,
  // and the simulation's generator picks the one to run.
  Fiber* take_simulated() noexcept;
  // A simulation's park(): nothing is ready, so virtual time jumps to the
  // next timer or deadline. With none, every fiber is blocked for good: the
  // run fails (a deadlock), which aborts them.
  void park_simulated() noexcept;
  std::optional<std::chrono::nanoseconds> park_timeout() const noexcept;
  bool quit() const noexcept;

  BlockCache blocks_;
  // Before remote_, whose parker holds its address, and io_, which watches it.
  EventFd wake_fd_;
  WorkerRemote remote_;
  fiber::Context context_;  // this thread's own stack, where the loop runs
  Fiber* current_ = nullptr;
  bool resuming_ = false;        // inside resume(): wakes may use next_
  bool concluding_ = false;      // inside conclude()'s cascade and finish: wakes inherit
  int turns_left_ = 0;           // fiber turns left in this batch (resumes and hand-overs)
  Suspend* arriving_ = nullptr;  // the hand-over in progress, for arrive()
  // An exiting fiber's hand-over: not on its stack, which exit_to() abandons
  // (and ASan's fake stack with it) before the side taking over reads it.
  // Read by that side, on this worker, before the next exit here.
  Suspend exiting_;
  NextSlot next_;
  // The oldest entries of the run queue, claimed together by one pop_batch()
  // so most pops take no atomic read-modify-write; not stealable, run first.
  std::array<ReadyEntry*, 8> claimed_{};
  std::uint32_t claimed_next_ = 0;
  std::uint32_t claimed_end_ = 0;
  IntrusiveList<Fiber, &Fiber::ready_links> pinned_ready_;
  std::unique_ptr<IoBackend> io_;
  std::vector<MailMessage> mail_;  // scratch for apply_mail()
  TimerHeap timers_;
  TimeoutWheel wheel_;
  fiber::StackCache stacks_;
  Spinner spinner_;
  IdleWatch watch_;
  std::uint32_t global_countdown_;  // picks until the global queue goes first
  std::uint64_t rng_;
  // The simulation this worker runs (Scheduler::sim), or null. Its fibers
  // queue in sim_ready_, in no order that matters: take_simulated() draws.
  Simulation* const sim_;
  std::vector<ReadyEntry*> sim_ready_;
  bool deadlocked_ = false;  // park_simulated() found a deadlock and failed the run
  bool searching_ = false;   // this worker holds a search count
  // expect_completions(): the fiber that asked (null: none), and its hint.
  Fiber* expecting_fiber_ = nullptr;
  std::size_t expected_completions_ = 0;
  Deadline expected_by_{};
  Fiber* dedicated_root_ = nullptr;
  bool dedicated_done_ = false;
  std::uint64_t id_next_ = 0;
  std::uint64_t id_end_ = 0;
  EhGlobals* const eh_;                   // this thread's, fixed for its lifetime
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

// Destroys the running fiber's FiberLocal values (on its own stack, at exit).
void destroy_fiber_locals(Fiber* f) noexcept;

}  // namespace spindle::detail
