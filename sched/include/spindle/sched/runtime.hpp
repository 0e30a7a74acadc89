// Runtime: owns the configuration and runs a root fiber on a pool of workers.
// RuntimeHandle: reach a running runtime from any thread.
// Nothing here suspends a fiber but RuntimeHandle::stop: the spawn calls return at once, and
// Runtime::run blocks the calling (plain) thread, which becomes worker 0, until
// shutdown completes. Called on a worker it throws std::logic_error.
#pragma once

#include <chrono>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "spindle/sched/config.hpp"
#include "spindle/sched/context.hpp"
#include "spindle/sched/detail/core.hpp"
#include "spindle/sched/detail/metrics.hpp"

namespace spindle {

// Copyable, thread-safe. Valid while the runtime it came from runs; afterwards
// spawns through it report errc::aborted without running.
class RuntimeHandle {
 public:
  // The root fiber's context: fibers spawned through it are children of the
  // root (aborted when the root ends). From any thread, inside or outside the
  // runtime.
  Context context() const noexcept { return Context(*scheduler_, detail::root_node(*scheduler_)); }

  template <class F>
  JoinHandle<SpawnResult<F>> spawn(F&& fn) const {
    return context().spawn(std::forward<F>(fn));
  }
  template <class F>
  JoinHandle<SpawnResult<F>> spawn_blocking(F&& fn) const {
    return context().spawn_blocking(std::forward<F>(fn));
  }

  // True until shutdown begins.
  bool running() const noexcept { return detail::accepting(*scheduler_); }

  // The I/O backend the runtime chose (Config::io_backend): "io_uring" or
  // "epoll".
  std::string_view io_backend() const noexcept { return detail::io_backend(*scheduler_); }

  // Every live fiber of the runtime (id, name, state, what it waits for, age),
  // indented by the supervision tree, with a symbolized backtrace of each
  // suspended one. Holds all workers between fibers while it reads their
  // stacks (microseconds per fiber), so it is for debugging, not for a hot
  // path. From any thread or fiber; the calling fiber is listed as running.
  // Sanitizer builds show no backtraces.
  // Suspends: a fiber of this runtime, while the backtraces are symbolized on
  // the blocking pool (reading debug information takes 100 ms and more the
  // first time); a plain thread blocks for it.
  std::string dump() const { return detail::dump(*scheduler_); }

  // The runtime's metrics (runtime_* and those registered through its
  // contexts) in the Prometheus text exposition format, version 0.0.4.
  // From any thread; never suspends (it takes the metrics' own mutexes).
  std::string metrics_text() const { return detail::metrics_text(*scheduler_); }

  // Context::stop and Context::stopped (same semantics), from any thread; on
  // a plain thread stop() blocks on a futex.
  // Suspends: stop(), as Context::stop.
  Result<void> stop(int code,
                    std::optional<std::chrono::nanoseconds> timeout = std::nullopt) const {
    return context().stop(code, timeout);
  }
  StopSignal stopped() const { return context().stopped(); }

  // Internal: handles come from current_runtime().
  explicit RuntimeHandle(std::shared_ptr<detail::Scheduler> s) noexcept
      : scheduler_(std::move(s)) {}

 private:
  std::shared_ptr<detail::Scheduler> scheduler_;
};

// The runtime of the running fiber. Throws std::logic_error outside a fiber.
RuntimeHandle current_runtime();

// The validated configuration of the running fiber's runtime (net/ and
// storage/ take their defaults from it). Throws std::logic_error outside a fiber.
const Config& current_config();

namespace detail {

// Runtime::run on `scheduler`, whose metrics go to `metrics` and which
// `live` holds while it runs.
template <class F>
SpawnResult<F> run_fiber(std::shared_ptr<Scheduler> scheduler, F&& root, MetricsCell& metrics,
                         LiveScheduler& live) {
  using T = SpawnResult<F>;
  struct Clear {
    LiveScheduler& live;
    ~Clear() { live.store({}); }
  } clear{live};
  metrics.attach(*scheduler);
  auto* fiber = new FiberImpl<std::decay_t<F>, T>(*scheduler, std::forward<F>(root));
  struct Release {
    Fiber* f;
    ~Release() { f->unref(); }
  } release{fiber};
  fiber->ref();  // ours; run_root consumes the creation reference
  run_root(scheduler, fiber, &live);
  if (fiber->outcome() == Task::Outcome::kException) std::rethrow_exception(fiber->exception());
  if constexpr (!std::is_void_v<T>) {
    if (fiber->outcome() != Task::Outcome::kValue || !fiber->value)
      throw std::system_error(make_error_code(errc::aborted), "spindle: root fiber aborted");
    return std::move(*fiber->value);
  }
}

}  // namespace detail

// Not thread-safe; run() may be called again after it returns.
class Runtime {
 public:
  // Validates `config` (std::invalid_argument naming the setting) before
  // taking any resource.
  explicit Runtime(Config config = {});

  // Runs `root` as a fiber on worker 0, which is the calling thread, with
  // Config::workers - 1 more worker threads. When the root returns, every
  // other fiber is aborted, in-flight reads are cancelled and writes finish,
  // and all threads are joined; then run() returns the root's value. If the
  // root throws, or (with catch_exceptions = false) any fiber throws, run()
  // rethrows the first such exception after that same shutdown. Throws
  // std::runtime_error if the kernel lacks what spindle needs.
  //
  // Each run sets SIGPIPE to SIG_IGN if it is at its default action (which
  // kills the process), so that a write into a pipe or socket whose reader
  // is gone fails with EPIPE; a disposition the program chose stays, and
  // children spawned through spindle::process start with the default.
  template <class F>
  SpawnResult<F> run(F&& root) {
    return detail::run_fiber(detail::make_scheduler(config_), std::forward<F>(root), metrics_,
                             live_);
  }

  const Config& config() const noexcept { return config_; }

  // RuntimeHandle::metrics_text() of the latest run, from any thread: live
  // while run() runs, the final values once it returned (until the next
  // run() starts); empty before the first run.
  std::string metrics_text() const { return metrics_.text(); }

  // RuntimeHandle::dump() while run() runs, from any other thread; empty
  // otherwise.
  std::string dump() const {
    auto s = live_.load().lock();
    return s ? detail::dump(*s) : std::string();
  }

 private:
  Config config_;
  detail::MetricsCell metrics_;
  detail::LiveScheduler live_;
};

}  // namespace spindle
