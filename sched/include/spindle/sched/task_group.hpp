// TaskGroup: a nursery. Fibers spawned into a scope, joined before it ends;
// the first failure aborts the rest.
#pragma once

#include <concepts>
#include <exception>
#include <expected>
#include <functional>
#include <system_error>
#include <type_traits>
#include <utility>

#include "spindle/base/result.hpp"
#include "spindle/base/thread_annotations.hpp"
#include "spindle/sched/context.hpp"
#include "spindle/sched/detail/node.hpp"
#include "spindle/sched/detail/spinlock.hpp"
#include "spindle/sched/join_set.hpp"

namespace spindle {
namespace detail {

// The supervision node of a TaskGroup: a child of the fiber that made the
// group, and the parent of the group's fibers, so that aborting either
// aborts them. Not a task: it never completes; the group unlinks it.
class GroupNode final : public Node {
 public:
  // A node under `parent`, or an aborted one if `parent` is aborted (spawns
  // under it then never run). The caller owns its creation reference.
  static GroupNode* open(Node& parent);
  // Unlinks the node from its parent and drops the creation reference.
  void close() noexcept;

 private:
  GroupNode() noexcept = default;
};

// The error a group fiber's return value reports: the code of a
// std::error_code, or of a failed Result (std::expected<U, std::error_code>).
inline std::error_code failure_code(const std::error_code& ec) noexcept { return ec; }
template <class U>
std::error_code failure_code(const std::expected<U, std::error_code>& r) noexcept {
  return r ? std::error_code() : r.error();
}

// What a group fiber may return.
template <class R>
concept GroupResult = std::is_void_v<R> || requires(const R& r) {
  { failure_code(r) } -> std::same_as<std::error_code>;
};

}  // namespace detail

// A nursery: the fibers spawned into it are joined by wait() or, at the
// latest, by the destructor, so none outlives the group's scope.
//
// A fiber of the group fails when its callable throws (errc::exited; the
// exception is kept, see exception()) or returns a failure: a nonzero
// std::error_code, or a Result<U> (any std::expected<U, std::error_code>)
// holding an error. Those and void are the return types spawn() accepts; a
// value is dropped (a JoinSet returns values). The first failure, in the
// order the fibers report it, aborts the group at once: every other fiber of
// the group is aborted (sticky: its blocking calls return errc::aborted) and
// so is every later spawn (its callable never runs). What those aborts cause,
// errc::aborted returned or thrown, is not reported: it comes second.
//
// With Config::catch_exceptions = false, a throw also fails the runtime, as
// it does in any fiber (Runtime::run rethrows it).
//
// The group's fibers are children of the group's node, itself a child of the
// fiber that made the group: aborting that fiber aborts them.
//
// Not thread-safe: the fiber that made the group owns it (spawn, wait); its
// fibers run anywhere. Neither movable nor copyable: its fibers refer to it.
// spawn(), exception() and size() never suspend.
class TaskGroup {
 public:
  // A group in the calling fiber. Throws std::logic_error outside a fiber.
  TaskGroup();
  TaskGroup(const TaskGroup&) = delete;
  TaskGroup& operator=(const TaskGroup&) = delete;
  // Aborts the fibers left and waits for them to end, without interruption,
  // as wait() would after a failure, so that none outlives the scope; a
  // failure not yet seen by wait() is dropped. During unwinding (the
  // destructor runs because of an exception) it does the same: the
  // exception in flight goes on, and the group's own failure is dropped.
  ~TaskGroup();

  // Spawns `fn` as a fiber of the group (see the class comment for the
  // return types it takes). After the group's first failure, or in an
  // aborted group, `fn` never runs.
  template <class F>
  void spawn(F&& fn) {
    static_assert(detail::GroupResult<SpawnResult<F>>,
                  "TaskGroup::spawn: the callable returns void, std::error_code or a Result");
    set_.spawn([this, body = std::decay_t<F>(std::forward<F>(fn))]() mutable {
      try {
        if constexpr (std::is_void_v<SpawnResult<F>>) {
          std::invoke(std::move(body));
        } else if (std::error_code ec = detail::failure_code(std::invoke(std::move(body)))) {
          fail(ec, nullptr);
        }
      } catch (...) {
        fail(make_error_code(errc::exited), std::current_exception());
        throw;
      }
    });
  }

  // Joins every fiber of the group and returns the first failure (errc::exited
  // for a throw, whose exception is exception()), or success. In an aborted
  // fiber (the owner was aborted, which aborted the group), returns
  // errc::aborted once the group's fibers have ended. At the end of the
  // caller's deadline scope (this_fiber::with_deadline) it aborts the group's
  // fibers and, once they have ended, returns errc::timed_out (unless one
  // failed first). The group may be spawned into and waited again; a failure
  // stays the group's answer.
  // Suspends: until every fiber of the group has ended.
  Result<void> wait();

  // wait(), throwing on failure: the first failing fiber's own exception if
  // it threw, else std::system_error with the error code.
  // Suspends: as wait().
  void wait_or_throw();

  // The exception of the first failure, if it was a throw; else null.
  std::exception_ptr exception() const noexcept;

  // The fibers spawned and not yet joined by wait().
  std::size_t size() const noexcept { return set_.size(); }

 private:
  explicit TaskGroup(detail::Fiber& owner);

  // Records the group's first failure, then aborts the group; a failure of a
  // fiber already aborted is ignored. On the failing fiber.
  void fail(std::error_code ec, std::exception_ptr error) noexcept;
  // Joins every fiber of the group.
  void drain();

  detail::GroupNode* node_;  // the creation reference; closed by the destructor
  JoinSet<void> set_;        // the group's fibers, spawned under node_
  mutable detail::SpinLock lock_;
  std::error_code first_ SPINDLE_GUARDED_BY(lock_);
  std::exception_ptr exception_ SPINDLE_GUARDED_BY(lock_);
};

}  // namespace spindle
