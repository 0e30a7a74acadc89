// JoinSet<T>: fibers spawned into a set and joined in the order they finish.
#pragma once

#include <cstddef>
#include <optional>
#include <type_traits>
#include <utility>

#include "spindle/base/intrusive_list.hpp"
#include "spindle/base/result.hpp"
#include "spindle/base/thread_annotations.hpp"
#include "spindle/sched/context.hpp"
#include "spindle/sched/detail/spinlock.hpp"
#include "spindle/sched/detail/task.hpp"
#include "spindle/sched/detail/wait.hpp"

namespace spindle {
namespace detail {

class JoinSetCore;

// One fiber of a JoinSet: the hook its completion calls, which puts it on the
// set's ready list.
struct JoinSetMember final : CompletionHook {
  explicit JoinSetMember(JoinSetCore& s) noexcept : set(&s) {}
  void task_completed() noexcept override;

  JoinSetCore* set;
  Task* task = nullptr;                   // with a reference, dropped by JoinSetCore::release
  void* cell = nullptr;                   // the task's ResultCell<T>
  ListLinks<JoinSetMember> member_links;  // in set->members_; the owner's
  ListLinks<JoinSetMember> ready_links;   // in set->ready_; guarded by set->lock_
};

// The untyped part of JoinSet<T>: its members, the ready list their
// completions fill, and the owner's wait on it.
//
// Thread-safety: only the owner calls the functions below but push_ready(),
// which a member's task_completed() calls on the completing thread: it
// touches ready_ and waiter_ only, under lock_, whose unlock is its last
// access to the set.
// Lifetime: a member is freed only after the owner took it off ready_ (so
// after its hook's unlock); the set outlives its members (JoinSet's
// destructor takes them all). Every operation is O(1) but abort_all().
class JoinSetCore {
 public:
  JoinSetCore() noexcept = default;
  JoinSetCore(const JoinSetCore&) = delete;
  JoinSetCore& operator=(const JoinSetCore&) = delete;

  std::size_t size() const noexcept { return size_; }

  // A new member, counted in the set, for a spawn to hook its fiber to.
  JoinSetMember* add();
  // Undoes add() for a spawn that threw before it launched a fiber.
  void cancel(JoinSetMember* m) noexcept;
  // Gives `m` its launched task, with a reference for the set, and the
  // task's ResultCell. The set joins through take() and never through the
  // task's handle, which is released at once.
  static void attach(JoinSetMember* m, Task* task, void* cell) noexcept;

  // A member whose task has completed, out of the set (release it), or null.
  // Never suspends.
  JoinSetMember* try_take() noexcept;
  // The next member whose task completes, out of the set (release it); null
  // once the set is empty. A caller that is aborted, or is aborted or reaches
  // its deadline scope's end while it waits, aborts every member and from
  // then on waits without interruption: the members end promptly, and a loop
  // draining the set terminates.
  // Suspends: until a member's task completes.
  JoinSetMember* take() noexcept;
  // Whether the caller's deadline scope ended a take() since the last add().
  bool cut_short() const noexcept { return cut_short_; }
  // Drops a taken member and its reference on its task.
  static void release(JoinSetMember* m) noexcept;

  // Aborts the task of every member. O(size()).
  void abort_all() noexcept;

  // JoinSetMember::task_completed.
  void push_ready(JoinSetMember* m) noexcept;

 private:
  // Removes `m`, taken off ready_, from the set.
  void unlink(JoinSetMember* m) noexcept;

  IntrusiveList<JoinSetMember, &JoinSetMember::member_links> members_;  // not yet taken
  std::size_t size_ = 0;                                                // members_'s length
  bool all_aborted_ = false;  // abort_all() ran since the last add()
  bool cut_short_ = false;    // the deadline scope ended a take() since the last add()
  SpinLock lock_;
  IntrusiveList<JoinSetMember, &JoinSetMember::ready_links> ready_ SPINDLE_GUARDED_BY(lock_);
  WaitQueue waiter_ SPINDLE_GUARDED_BY(lock_);  // the owner, in take()
};

}  // namespace detail

// A set of fibers returning T, joined in completion order (tokio's JoinSet).
// Each fiber is a child of the set's context: aborting that node (or the
// fiber that made the set) aborts them.
//
// Not thread-safe: one owner calls it (a fiber, or a plain thread for a set
// made from a Context); its fibers run anywhere. Where a fiber parks, a plain
// thread blocks on a futex. spawn, try_join_next, size, empty and abort_all
// never suspend.
//
// The destructor aborts the fibers left and waits for them to end, without
// interruption, dropping their results: none outlives the set.
template <class T>
class JoinSet {
 public:
  // A set whose fibers are children of the calling fiber. Throws
  // std::logic_error outside a fiber.
  JoinSet() : context_(this_fiber::context()) {}
  // A set whose fibers are children of `context`'s node.
  explicit JoinSet(Context context) noexcept : context_(std::move(context)) {}
  JoinSet(const JoinSet&) = delete;
  JoinSet& operator=(const JoinSet&) = delete;
  ~JoinSet() {
    abort_all();
    while (detail::JoinSetMember* m = core_.take()) detail::JoinSetCore::release(m);
  }

  // Spawns `fn`, which returns T, as a fiber of the set. If the context is
  // aborted or the runtime is shutting down, `fn` never runs and the fiber
  // joins as errc::aborted.
  template <class F>
  void spawn(F&& fn) {
    static_assert(std::is_same_v<SpawnResult<F>, T>, "JoinSet<T>::spawn: the callable returns T");
    detail::JoinSetMember* m = core_.add();
    try {
      auto* fiber = context_.spawn_hooked(*m, std::forward<F>(fn));
      detail::JoinSetCore::attach(m, fiber, static_cast<detail::ResultCell<T>*>(fiber));
    } catch (...) {
      core_.cancel(m);
      throw;
    }
  }

  // The result of the next fiber of the set to finish, in the order they
  // finish (not the order of spawn): its value, errc::exited if it threw
  // (Config::catch_exceptions = true), errc::aborted if it was aborted.
  // nullopt when the set is empty. In an aborted fiber, or once the caller's
  // deadline scope (this_fiber::with_deadline) ends a wait here, it aborts
  // the set's fibers and goes on returning their results as they end (a
  // draining loop ends); it never reports the caller's own abort or deadline
  // (cut_short() tells the latter).
  // Suspends: until one of the set's fibers ends (not if one has, or the set
  // is empty).
  std::optional<Result<T>> join_next() { return take(core_.take()); }

  // join_next() without waiting: nullopt if no fiber of the set has ended
  // (or the set is empty).
  std::optional<Result<T>> try_join_next() { return take(core_.try_take()); }

  // Whether the caller's deadline scope ended a join_next() wait, and so
  // aborted the set, since the last spawn.
  bool cut_short() const noexcept { return core_.cut_short(); }

  // The fibers spawned and not yet joined, running or ended.
  std::size_t size() const noexcept { return core_.size(); }
  bool empty() const noexcept { return core_.size() == 0; }

  // Aborts every fiber of the set; they stay in it, to be joined (one still
  // running then reports errc::aborted, or errc::exited if it throws). Fibers
  // spawned later are not affected.
  void abort_all() noexcept { core_.abort_all(); }

 private:
  static std::optional<Result<T>> take(detail::JoinSetMember* m) {
    if (!m) return std::nullopt;
    struct Release {
      detail::JoinSetMember* m;
      ~Release() { detail::JoinSetCore::release(m); }
    } release{m};
    return detail::take_result(*m->task, *static_cast<detail::ResultCell<T>*>(m->cell));
  }

  Context context_;
  detail::JoinSetCore core_;
};

}  // namespace spindle
