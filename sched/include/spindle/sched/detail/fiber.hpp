// Fiber: the control block of one fiber. Internal to spindle; users hold
// JoinHandles.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "spindle/base/intrusive_list.hpp"
#include "spindle/fiber/context.hpp"
#include "spindle/fiber/stack.hpp"
#include "spindle/sched/detail/task.hpp"

namespace spindle::detail {

class WorkerRemote;
class TimerHeap;
class Scheduler;
class LocalSlots;
struct Identity;
struct IoRequest;
struct TaskRecord;

// A fiber is spawned (control block and closure only: no stack), becomes ready
// (in exactly one queue; a joiner may start it before its spawn entry comes
// up, ready_entry.hpp), runs (it takes a stack the first time), parks, is
// made ready by the single winner of its wake, and finally exits.
//
// Thread-safety: the scheduling fields are owned by whoever holds the fiber's
// "run right": the worker running it, or, while it is parked, the single waker
// that claims `wake_word`. Fields marked atomic may be read by anyone.
class Fiber : public Task {
 public:
  explicit Fiber(Scheduler& scheduler) noexcept : scheduler_(&scheduler) {}

  // Runs the body and stores its result; an exception escapes to the caller.
  // Destroys the closure before returning or throwing, on the fiber's stack.
  virtual void run() = 0;
  // Destroys the closure without running it (the fiber was aborted first).
  virtual void discard() noexcept = 0;
  // Destroys the stored return value, if any. For an ended fiber that nothing
  // can join any more.
  virtual void drop_value() noexcept = 0;

  // Control blocks come from their worker's cache (sched/src/core/block_cache.hpp).
  // Over-aligned ones (an alignas closure) use the global allocator.
  static void* operator new(std::size_t size);
  static void operator delete(void* block, std::size_t size) noexcept;
  static void* operator new(std::size_t size, std::align_val_t align);
  static void operator delete(void* block, std::size_t size, std::align_val_t align) noexcept;

  Scheduler& scheduler() const noexcept { return *scheduler_; }
  // Sets the park word's abort flag and interrupts the park it finds (step 6
  // of park_word.hpp). Called by the abort (on_abort) and again by the owner
  // if an I/O completion dropped the flag (confirm_io_abort). The node must
  // be aborted already.
  void deliver_abort() noexcept;

  // The fields every park and switch touches come first, next to the
  // Task's, so a park touches as few cache lines of the block as it can.
  // The park word: epoch, abort flag and park kind. Its protocol (arm,
  // claim, completion, abort) is sched/src/core/park_word.hpp's.
  std::atomic<std::uint64_t> wake_word{0};
  std::uint64_t epoch = 0;  // the fiber's latest park; written only by the fiber
  // The one-byte fields share a word: the control block's size is part of the
  // cost of every spawn.
  WakeReason wake_reason = WakeReason::kNotified;  // written by the claiming waker
  Outcome exit_outcome = Outcome::kPending;        // set by the fiber just before it exits
  bool started = false;
  bool root = false;
  // Set by the spawn that queues the fiber (a spawn entry, ready_entry.hpp).
  // Cleared by whoever takes the right to start it, the worker that takes
  // the entry or a joiner (expedite()): by an exchange while a handle may
  // still join it. Any thread.
  std::atomic<bool> claimable{false};
  // The innermost this_fiber::with_deadline around the running code; written
  // only by the fiber.
  Deadline scope_deadline = kNoDeadline;
  // What the fiber's latest park waits for ("mutex", "sleep", "io"...), for
  // dumps. Written by the fiber before it parks; read while it is parked.
  const char* waiting_on = nullptr;
  ListLinks<Fiber> ready_links;                  // while ready in a worker's pinned list
  WorkerRemote* pinned = nullptr;                // if set, resumes only on this worker
  TimerHeap* timer_heap = nullptr;               // holds the current park's timer, if any
  std::atomic<WorkerRemote*> io_owner{nullptr};  // worker whose backend holds the kIo park's op
  IoRequest* io_request = nullptr;               // valid while parked in kIo
  void* eh_state[2] = {nullptr, nullptr};        // the fiber's C++ exception-handling globals
  fiber::Stack stack;                            // taken when the fiber first runs
  std::optional<fiber::Context> context;         // exists while the fiber has a stack
  LocalSlots* locals = nullptr;                  // FiberLocal values, created on first use
  std::exception_ptr exit_error;

  // Identity.
  std::uint64_t id = 0;
  std::string name;
  // The spawning context's labels (null for the root's): this_fiber::context()
  // carries them, and so do the fiber's own spawns.
  std::shared_ptr<const Identity> identity;
  TaskRecord* record = nullptr;  // its runtime_tasks_* series (metrics.hpp)
  // Coarse monotonic clock (coarse_now_ms) at launch; on a worker, as of the
  // start of the spawning fiber's batch of turns.
  std::uint64_t spawned_ms = 0;

 protected:
  void destroy() noexcept override { delete this; }
  void on_abort() noexcept override;
  // A joiner on a pool worker of this fiber's runtime claims it if it has not
  // started, and has it run next there: a parent joining a child it just
  // spawned runs it at once, while its stack and the child's data are hot,
  // instead of behind everything queued since (a fork-join tree runs depth
  // first). The spawn entry left in a queue holds a reference and is skipped.
  void expedite() noexcept override;

 private:
  Scheduler* scheduler_;
};

// The fiber running body F, returning T.
template <class F, class T>
class FiberImpl final : public Fiber, public ResultCell<T> {
 public:
  template <class G>
  FiberImpl(Scheduler& s, G&& fn) : Fiber(s), fn_(std::forward<G>(fn)) {}

  void run() override { run_body_into(fn_, static_cast<ResultCell<T>&>(*this)); }
  void discard() noexcept override { fn_.reset(); }
  void drop_value() noexcept override {
    if constexpr (!std::is_void_v<T>) this->value.reset();
  }

 private:
  std::optional<F> fn_;
};

}  // namespace spindle::detail
