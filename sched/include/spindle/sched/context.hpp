// Context: a place in the supervision tree, and the spawn calls that put new
// fibers under it. No spawn call suspends: each queues the new task and
// returns its JoinHandle at once (join it to wait). Context's members work on
// any thread; the free spawn functions at the bottom need a fiber.
#pragma once

#include <charconv>
#include <chrono>
#include <concepts>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "spindle/sched/detail/core.hpp"
#include "spindle/sched/detail/metrics.hpp"
#include "spindle/sched/join_handle.hpp"
#include "spindle/sched/stop.hpp"

namespace spindle {

// What a spawned callable returns, as stored in its JoinHandle.
template <class F>
using SpawnResult = std::remove_cvref_t<std::invoke_result_t<std::decay_t<F>&&>>;

namespace detail {

// The fiber that runs `fn`.
template <class F>
using SpawnedFiber = FiberImpl<std::decay_t<F>, SpawnResult<F>>;

// Spawns `fn` as a fiber under `node` of `scheduler`, with `hook` (may be
// null) told of its completion, and returns it with a reference for the
// caller (a handle's or a JoinSet's).
template <class F>
SpawnedFiber<F>* spawn_fiber(Scheduler& scheduler, Node& node, Placement placement,
                             std::string_view name, const std::shared_ptr<const Identity>& identity,
                             CompletionHook* hook, F&& fn) {
  auto* fiber = new SpawnedFiber<F>(scheduler, std::forward<F>(fn));
  fiber->ref_unshared();  // the caller's reference; launch() takes the creation one
  fiber->set_hook_unshared(hook);
  launch(fiber, node, placement, name, identity);
  return fiber;
}

// spawn_fiber() without a hook, as a JoinHandle (Context::spawn and the free
// spawn()).
template <class F>
JoinHandle<SpawnResult<F>> spawn_under(Scheduler& scheduler, Node& node, Placement placement,
                                       std::string_view name,
                                       const std::shared_ptr<const Identity>& identity, F&& fn) {
  auto* fiber =
      spawn_fiber(scheduler, node, placement, name, identity, nullptr, std::forward<F>(fn));
  return JoinHandle<SpawnResult<F>>(fiber, fiber);
}

// with_attribute's value as text: strings as they are, bool as true/false,
// numbers in their shortest round-trip form.
template <class V>
std::string attribute_text(const V& value) {
  if constexpr (std::is_convertible_v<const V&, std::string_view>) {
    return std::string(std::string_view(value));
  } else if constexpr (std::is_same_v<V, bool>) {
    return value ? "true" : "false";
  } else {
    static_assert(std::is_arithmetic_v<V>, "with_attribute: a string or a number");
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, value);
    return std::string(buf, r.ptr);
  }
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
//
// A Context also carries a label path and attributes (child, with_attribute)
// that name the fibers spawned through it and the metrics registered through
// it. Copying one costs a reference count or two.
class Context {
 public:
  // Internal: contexts come from this_fiber::context() and RuntimeHandle.
  Context(detail::Scheduler& s, detail::Node& n,
          std::shared_ptr<const detail::Identity> identity = nullptr) noexcept
      : scheduler_(&s), node_(&n), identity_(std::move(identity)) {
    node_->ref();
  }
  Context(const Context& o) noexcept
      : scheduler_(o.scheduler_), node_(o.node_), identity_(o.identity_) {
    node_->ref();
  }
  Context& operator=(const Context& o) noexcept {
    Context copy(o);
    std::swap(scheduler_, copy.scheduler_);
    std::swap(node_, copy.node_);
    std::swap(identity_, copy.identity_);
    return *this;
  }
  ~Context() { node_->unref(); }

  // True once the node is aborted: its spawns no longer run.
  bool aborted() const noexcept { return node_->aborted(); }

  // This context with `label` appended to its label path (joined with '_'):
  // the prefix of the metrics registered through it, and the name of the
  // fibers spawned through it without one. It is the same supervision node:
  // spawns through the child are still children of this node's task.
  // Throws std::invalid_argument unless `label` matches [a-zA-Z][a-zA-Z0-9_]*,
  // or if it would start the path with "runtime" (reserved for the runtime's
  // own metrics).
  Context child(std::string_view label) const {
    return Context(*scheduler_, *node_, detail::child_identity(identity_.get(), label));
  }

  // This context with the Prometheus label `key`="`value`" added to the
  // metrics registered through it (replacing an earlier value of `key`). The
  // value is a string or a number; the node and label path stay the same.
  // Throws std::invalid_argument unless `key` matches [a-zA-Z][a-zA-Z0-9_]*.
  template <class V>
  Context with_attribute(std::string_view key, const V& value) const {
    return Context(*scheduler_, *node_,
                   detail::identity_with(identity_.get(), key, detail::attribute_text(value)));
  }

  // The label path ("" at the root) and the attributes, sorted by key.
  std::string_view label() const noexcept {
    return identity_ ? std::string_view(identity_->label) : std::string_view();
  }
  std::span<const std::pair<std::string, std::string>> attributes() const noexcept {
    if (!identity_) return {};
    return identity_->attributes;
  }

  // Registers a metric in the runtime's registry, named `<label path>_<name>`
  // (`<name>` at the root) with the attributes as labels, and returns it; the
  // same name and attributes give the same metric, for the rest of the run.
  // Counters get the suffix `_total` unless `name` has it. The metric lives
  // until the Runtime is destroyed or runs again (metrics_text() shows it).
  // Thread-safe. Throws std::invalid_argument for a name not matching
  // [a-zA-Z][a-zA-Z0-9_]*, a root name starting with "runtime", or a name
  // already registered as another type.
  prometheus::Counter& register_counter(std::string_view name, std::string_view help) const {
    return detail::register_counter(*scheduler_, identity_.get(), name, help);
  }
  prometheus::Gauge& register_gauge(std::string_view name, std::string_view help) const {
    return detail::register_gauge(*scheduler_, identity_.get(), name, help);
  }
  // `buckets`: the upper bounds, ascending (+Inf is implied).
  prometheus::Histogram& register_histogram(std::string_view name, std::string_view help,
                                            std::vector<double> buckets) const {
    return detail::register_histogram(*scheduler_, identity_.get(), name, help, std::move(buckets));
  }

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

  // Internal (JoinSet): spawn(fn), with `hook` told when the fiber completes;
  // returns the fiber with a reference for the caller.
  template <class F>
  detail::SpawnedFiber<F>* spawn_hooked(detail::CompletionHook& hook, F&& fn) const {
    return detail::spawn_fiber(*scheduler_, *node_, detail::Placement::kPool, {}, identity_, &hook,
                               std::forward<F>(fn));
  }

  // Runs plain callable `fn` on the bounded blocking thread pool: for
  // getaddrinfo, CPU-heavy work or a legacy blocking API. Join the handle to
  // wait for it; abort cannot interrupt it once it runs.
  template <class F>
  JoinHandle<SpawnResult<F>> spawn_blocking(F&& fn) const {
    using T = SpawnResult<F>;
    auto* task = new detail::BlockingTaskImpl<std::decay_t<F>, T>(std::forward<F>(fn));
    task->ref();  // the handle's reference
    detail::launch_blocking(*scheduler_, task, *node_, identity_.get());
    return JoinHandle<T>(task, task);
  }

  // Requests the runtime's stop (see spindle/sched/stop.hpp): resolves every
  // StopSignal with `code` (the first call's code wins; later calls only
  // wait), then waits until no signal taken before the stop is alive. The
  // same for every Context of the runtime. errc::timed_out if signals are
  // still held after `timeout` (the stop stays requested); errc::aborted in
  // an aborted fiber (checked first: the stop is then not requested);
  // errc::closed after the runtime ended without a stop. Without a timeout,
  // a caller that holds a signal itself waits forever.
  // Suspends: until every holding signal is gone, the timeout, or abort.
  Result<void> stop(int code, std::optional<std::chrono::nanoseconds> timeout = std::nullopt) const;

  // A signal that resolves with the stop code. Taken before the stop it holds
  // the stop back while it (or a copy) lives; taken after, it is already
  // resolved. Never suspends.
  StopSignal stopped() const;

 private:
  template <class F>
  JoinHandle<SpawnResult<F>> spawn_as(detail::Placement placement, std::string_view name,
                                      F&& fn) const {
    return detail::spawn_under(*scheduler_, *node_, placement, name, identity_,
                               std::forward<F>(fn));
  }

  detail::Scheduler* scheduler_;
  detail::Node* node_;
  std::shared_ptr<const detail::Identity> identity_;  // null at the root
};

namespace this_fiber {
// The running fiber's supervision node, with the label path and attributes of
// the context that spawned it. Throws std::logic_error outside a fiber.
Context context();
}  // namespace this_fiber

// this_fiber::context().spawn(...): a child of the running fiber. These free
// functions are fiber-only (std::logic_error elsewhere) and never suspend.
template <class F>
JoinHandle<SpawnResult<F>> spawn(F&& fn) {
  detail::Fiber& self = detail::current_spawner();
  return detail::spawn_under(self.scheduler(), self, detail::Placement::kPool, {}, self.identity,
                             std::forward<F>(fn));
}
template <class F>
JoinHandle<SpawnResult<F>> spawn(std::string_view name, F&& fn) {
  detail::Fiber& self = detail::current_spawner();
  return detail::spawn_under(self.scheduler(), self, detail::Placement::kPool, name, self.identity,
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
