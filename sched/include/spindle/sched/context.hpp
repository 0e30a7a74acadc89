// Context: a place in the supervision tree, and the spawn calls that put new
// fibers under it. No spawn call suspends: each queues the new task and
// returns its JoinHandle at once (join it to wait). Context's members work on
// any thread; the free spawn functions at the bottom need a fiber.
#pragma once

#include <string_view>
#include <type_traits>
#include <utility>

#include "spindle/sched/detail/core.hpp"
#include "spindle/sched/join_handle.hpp"

namespace spindle {

// What a spawned callable returns, as stored in its JoinHandle.
template <class F>
using SpawnResult = std::remove_cvref_t<std::invoke_result_t<std::decay_t<F>&&>>;

namespace detail {

// Spawns `fn` as a fiber under `node` of `scheduler` (Context::spawn and the
// free spawn()).
template <class F>
JoinHandle<SpawnResult<F>> spawn_under(Scheduler& scheduler, Node& node, Placement placement,
                                       std::string_view name, F&& fn) {
  using T = SpawnResult<F>;
  auto* fiber = new FiberImpl<std::decay_t<F>, T>(scheduler, std::forward<F>(fn));
  fiber->ref();  // the handle's reference; launch() takes the creation one
  launch(fiber, node, placement, name);
  return JoinHandle<T>(fiber, fiber);
}

// The running fiber, for spawning its children without taking a reference
// on it (it cannot end while it runs). Throws std::logic_error outside a fiber.
Fiber& current_spawner();

}  // namespace detail

// A node of the supervision tree, as a copyable, thread-safe handle. A fiber
// spawned through a Context becomes that node's child: when the node's task
// ends or is aborted, the child is aborted too. this_fiber::context() is the
// running fiber's own node; keep a copy of an outer one (for example the
// root's) to spawn fibers that should outlive the fiber spawning them.
class Context {
 public:
  // Internal: contexts come from this_fiber::context() and RuntimeHandle.
  Context(detail::Scheduler& s, detail::Node& n) noexcept : scheduler_(&s), node_(&n) {
    node_->ref();
  }
  Context(const Context& o) noexcept : scheduler_(o.scheduler_), node_(o.node_) { node_->ref(); }
  Context& operator=(const Context& o) noexcept {
    Context copy(o);
    std::swap(scheduler_, copy.scheduler_);
    std::swap(node_, copy.node_);
    return *this;
  }
  ~Context() { node_->unref(); }

  // True once the node is aborted: its spawns no longer run.
  bool aborted() const noexcept { return node_->aborted(); }

  // Spawns `fn` as a fiber on the worker pool. It starts soon, even if the
  // handle is dropped. If the node is aborted or the runtime is shutting down,
  // `fn` never runs and the handle reports errc::aborted.
  template <class F>
  JoinHandle<SpawnResult<F>> spawn(F&& fn) const {
    return spawn_as(detail::Placement::kPool, {}, std::forward<F>(fn));
  }
  template <class F>
  JoinHandle<SpawnResult<F>> spawn(std::string_view name, F&& fn) const {
    return spawn_as(detail::Placement::kPool, name, std::forward<F>(fn));
  }

  // Spawns `fn` as the root fiber of a new thread with its own ring: for a
  // fiber that must not share a worker (a latency-critical loop). Its own
  // ordinary spawns run on the pool.
  template <class F>
  JoinHandle<SpawnResult<F>> spawn_dedicated(F&& fn, std::string_view name = {}) const {
    return spawn_as(detail::Placement::kDedicated, name, std::forward<F>(fn));
  }

  // Runs plain callable `fn` on the bounded blocking thread pool: for
  // getaddrinfo, CPU-heavy work or a legacy blocking API. Join the handle to
  // wait for it; abort cannot interrupt it once it runs.
  template <class F>
  JoinHandle<SpawnResult<F>> spawn_blocking(F&& fn) const {
    using T = SpawnResult<F>;
    auto* task = new detail::BlockingTaskImpl<std::decay_t<F>, T>(std::forward<F>(fn));
    task->ref();  // the handle's reference
    detail::launch_blocking(*scheduler_, task, *node_);
    return JoinHandle<T>(task, task);
  }

 private:
  template <class F>
  JoinHandle<SpawnResult<F>> spawn_as(detail::Placement placement, std::string_view name,
                                      F&& fn) const {
    return detail::spawn_under(*scheduler_, *node_, placement, name, std::forward<F>(fn));
  }

  detail::Scheduler* scheduler_;
  detail::Node* node_;
};

namespace this_fiber {
// The running fiber's supervision node. Throws std::logic_error outside a fiber.
Context context();
}  // namespace this_fiber

// this_fiber::context().spawn(...): a child of the running fiber. These free
// functions are fiber-only (std::logic_error elsewhere) and never suspend.
template <class F>
JoinHandle<SpawnResult<F>> spawn(F&& fn) {
  detail::Fiber& self = detail::current_spawner();
  return detail::spawn_under(self.scheduler(), self, detail::Placement::kPool, {},
                             std::forward<F>(fn));
}
template <class F>
JoinHandle<SpawnResult<F>> spawn(std::string_view name, F&& fn) {
  detail::Fiber& self = detail::current_spawner();
  return detail::spawn_under(self.scheduler(), self, detail::Placement::kPool, name,
                             std::forward<F>(fn));
}
template <class F>
JoinHandle<SpawnResult<F>> spawn_dedicated(F&& fn, std::string_view name = {}) {
  return this_fiber::context().spawn_dedicated(std::forward<F>(fn), name);
}
template <class F>
JoinHandle<SpawnResult<F>> spawn_blocking(F&& fn) {
  return this_fiber::context().spawn_blocking(std::forward<F>(fn));
}

}  // namespace spindle
