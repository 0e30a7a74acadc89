// Task: the joinable part of a fiber or a blocking call, what a JoinHandle
// refers to: completion, outcome, exception, the queue of joiners, and an
// optional hook told of the completion.
#pragma once

#include <atomic>
#include <exception>
#include <functional>
#include <optional>
#include <type_traits>

#include "spindle/base/result.hpp"
#include "spindle/sched/detail/node.hpp"
#include "spindle/sched/detail/wait.hpp"

namespace spindle {
class JoinCase;
}  // namespace spindle

namespace spindle::detail {

// Told once that a task completed (a JoinSet's member), however it ended,
// also unrun (aborted before it started, or refused at launch). Called on the
// completing thread, after done() is true and the joiners are woken, with no
// lock held; the completer holds a reference on the task for the call. The
// hook must outlive the task's completion.
class CompletionHook {
 public:
  virtual void task_completed() noexcept = 0;

 protected:
  ~CompletionHook() = default;
};

// Thread-safe. Completed exactly once.
class Task : public Node {
 public:
  enum class Outcome : std::uint8_t { kPending, kValue, kAborted, kException };

  bool done() const noexcept { return done_.load(std::memory_order_acquire); }
  // Valid once done().
  Outcome outcome() const noexcept { return outcome_; }
  const std::exception_ptr& exception() const noexcept { return exception_; }

  // Suspends the calling fiber (or blocks the calling thread) until the task is
  // done. Returns errc::aborted if the calling fiber is aborted first,
  // errc::timed_out at `deadline`.
  // Suspends: until the task completes, the deadline, or abort.
  Result<void> wait_done(Deadline deadline = kNoDeadline) noexcept;
  // wait_done() that only the task's completion ends: neither an abort of
  // the calling fiber nor its deadline scope does.
  // Suspends: until the task completes.
  void wait_ended() noexcept;

  // Its JoinHandle is gone: nothing will wait_done() on it any more. release;
  // pairs with the acquire in handle_released(), so that what the handle's
  // waits did is visible to whoever sees the flag.
  void release_handle() noexcept { handle_released_.store(true, std::memory_order_release); }
  bool handle_released() const noexcept { return handle_released_.load(std::memory_order_acquire); }

  // Sets the hook told of the completion, for a task no other thread can
  // reach yet (before its launch): fixed from then on, so the completer reads
  // it without the lock. A task without one pays a null test per completion.
  void set_hook_unshared(CompletionHook* hook) noexcept { hook_ = hook; }

  // Publishes the outcome and wakes every joiner. Once.
  void complete(Outcome outcome, std::exception_ptr error = nullptr) noexcept;
  // For a task that has ended: the cascade (everything it spawned is aborted
  // and its node closes to spawns), then complete(), in one critical section
  // when there is nothing to abort (Node::close_then).
  void close_and_complete(Outcome outcome, std::exception_ptr error) noexcept;

 protected:
  Task() noexcept = default;
  // Called by wait_done() before the caller waits: a task may use it to run
  // sooner. Called on the waiting fiber or thread.
  virtual void expedite() noexcept {}

 private:
  friend class spindle::JoinCase;

  // complete() with lock() (the node's) held.
  void complete_locked(Outcome outcome, std::exception_ptr error) noexcept SPINDLE_REQUIRES(lock());

  std::atomic<bool> done_{false};  // release in complete(); pairs with the acquire in done()
  std::atomic<bool> handle_released_{false};
  Outcome outcome_ = Outcome::kPending;
  std::exception_ptr exception_;
  CompletionHook* hook_ = nullptr;
  WaitQueue joiners_ SPINDLE_GUARDED_BY(lock());  // as is the done_ transition
};

// Storage for a task's return value; empty for void.
template <class T>
struct ResultCell {
  std::optional<T> value;
};
template <>
struct ResultCell<void> {};

// What joining `task`, which is done(), reports: its value (moved out of
// `cell`, so that a second take reports errc::closed), errc::exited if it
// threw, else errc::aborted.
template <class T>
Result<T> take_result(const Task& task, [[maybe_unused]] ResultCell<T>& cell) {
  switch (task.outcome()) {
    case Task::Outcome::kValue:
      if constexpr (std::is_void_v<T>) {
        return {};
      } else {
        if (!cell.value) return failure(errc::closed);
        T v = std::move(*cell.value);
        cell.value.reset();
        return v;
      }
    case Task::Outcome::kException:
      return failure(errc::exited);
    case Task::Outcome::kAborted:
    case Task::Outcome::kPending:
      break;
  }
  return failure(errc::aborted);
}

// Runs a task's body `fn` once, storing its value in `cell`, and destroys the
// closure whether the body returns or throws.
template <class F, class T>
void run_body_into(std::optional<F>& fn, ResultCell<T>& cell) {
  struct Drop {
    std::optional<F>& fn;
    ~Drop() { fn.reset(); }
  } drop{fn};
  if constexpr (std::is_void_v<T>) {
    std::invoke(std::move(*fn));
  } else {
    cell.value.emplace(std::invoke(std::move(*fn)));
  }
}

}  // namespace spindle::detail
