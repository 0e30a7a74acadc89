// JoinHandle<T>: the result of a spawned fiber or blocking call.
#pragma once

#include <chrono>
#include <exception>
#include <system_error>
#include <utility>

#include "spindle/base/result.hpp"
#include "spindle/base/time.hpp"
#include "spindle/sched/detail/task.hpp"

namespace spindle {

// Move-only; not thread-safe (one owner), but the task it refers to may run
// anywhere. Dropping the handle detaches: the task keeps running. Dropping a
// handle never aborts. The join calls and get() suspend a fiber (a plain
// thread blocks on a futex); the other calls never suspend.
template <class T>
class JoinHandle {
 public:
  JoinHandle() noexcept = default;
  JoinHandle(detail::Task* task, detail::ResultCell<T>* cell) noexcept : task_(task), cell_(cell) {}
  JoinHandle(JoinHandle&& o) noexcept
      : task_(std::exchange(o.task_, nullptr)), cell_(std::exchange(o.cell_, nullptr)) {}
  JoinHandle& operator=(JoinHandle&& o) noexcept {
    if (this != &o) {
      reset();
      task_ = std::exchange(o.task_, nullptr);
      cell_ = std::exchange(o.cell_, nullptr);
    }
    return *this;
  }
  ~JoinHandle() { reset(); }

  bool valid() const noexcept { return task_ != nullptr; }
  bool is_finished() const noexcept { return task_ && task_->done(); }

  // Waits for the task and takes its result: the value, errc::aborted if the
  // task was aborted (or the runtime shut down before it ran), errc::exited if
  // it ended by throwing (Config::catch_exceptions = true). Returns
  // errc::aborted without waiting further if the caller itself is aborted.
  // The value is moved out: a second join() of a value reports errc::closed.
  // Suspends: until the task ends.
  Result<T> join() { return join_until(kNoDeadline); }
  // join(), or errc::timed_out at `deadline` (the task keeps running, and a
  // later join can still take its result).
  // Suspends: until the task ends, the deadline, or abort.
  Result<T> join_until(Deadline deadline) {
    if (!task_) return failure(errc::closed);
    if (auto waited = task_->wait_done(deadline); !waited) return failure(waited.error());
    return detail::take_result(*task_, *cell_);
  }

  Result<T> join_for(std::chrono::nanoseconds timeout) {
    return join_until(deadline_after(timeout));
  }
  // join() that only the task's end ends, also in an aborted caller and
  // past its deadline scope: for a caller that lent the task something (a
  // descriptor, a buffer) and must not go on while the task may use it.
  // Abort the task, or tell it to stop, first if it should end soon. What
  // it reports is as join()'s: errc::aborted for a task the abort reached
  // (a child of the aborted caller), whose value is then dropped.
  // Suspends: until the task ends.
  Result<T> join_uninterruptible() {
    if (!task_) return failure(errc::closed);
    task_->wait_ended();
    return detail::take_result(*task_, *cell_);
  }
  // join(), throwing on failure: the task's own exception if it threw, else
  // std::system_error with the error code.
  // Suspends: until the task ends.
  T get() {
    auto r = join();
    if (!r && r.error() == errc::exited && task_->exception())
      std::rethrow_exception(task_->exception());
    return std::move(r).value();
  }

  // Aborts the task and its descendants. Its blocking calls return
  // errc::aborted; a task that has not started never runs. Thread-safe.
  void abort() noexcept {
    if (task_) task_->abort_tree();
  }

  // Drops the handle; the task keeps running.
  void detach() noexcept { reset(); }

 private:
  friend class JoinCase;

  void reset() noexcept {
    if (task_) {
      task_->release_handle();
      std::exchange(task_, nullptr)->unref();
    }
    cell_ = nullptr;
  }

  detail::Task* task_ = nullptr;
  detail::ResultCell<T>* cell_ = nullptr;
};

}  // namespace spindle
