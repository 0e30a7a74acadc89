// spindle::sim::Runtime: runs spindle code as a deterministic simulation.
//
// The root fiber and everything it spawns run on the calling thread, one
// fiber at a time, as on a one-worker Runtime, except that
//   - which ready fiber runs next, and the order in which select() looks at
//     its cases, are drawn from Config::seed;
//   - Clock::now() (spindle::Clock: every timer, deadline and timeout) reads
//     virtual time, which stands still while any fiber is ready and, when
//     every fiber is blocked, jumps to the next timer or deadline: a one-hour
//     sleep_for costs no real time;
//   - every fiber turn is folded into a digest, with the virtual time it ran
//     at. Two runs of one program with one seed have equal digests; a test
//     asserts that, and prints the seed of a run that failed, which then
//     replays identically.
// What would run outside the simulation's thread is refused, failing the run
// with std::logic_error saying what: spawn_blocking, spawn_dedicated and
// spawns from plain threads. A plain thread that wakes a simulated fiber
// (say, a channel send) is a bug the runtime stops at (it aborts the
// process with a message). When every fiber is blocked and nothing is
// pending that could wake one, the run fails with a deadlock error (the
// virtual time, the seed, and RuntimeHandle::dump()'s listing of the fibers
// and what each waits for), after every fiber is aborted.
//
// I/O is not simulated yet: every operation of net/, storage/, fs/ and
// io_op fails with errc::unsupported (the backend is named "sim").
// std::chrono::steady_clock and other clocks still read real time.
//
// Not thread-safe: one thread runs a Runtime, and run() blocks it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "spindle/sched/config.hpp"
#include "spindle/sched/detail/simulation.hpp"
#include "spindle/sched/runtime.hpp"

namespace spindle::sim {

struct Config {
  // Decides the schedule: every run with this seed makes the same choices.
  std::uint64_t seed = 0;
  // The configuration the simulated code sees (current_config()), except
  // that a simulation has one worker and no idle spinner or stall detector
  // (workers, idle_spinner and stall_threshold are set so); io_backend is
  // not used. Validated as by spindle::Runtime.
  spindle::Config runtime{};
};

class Runtime {
 public:
  // Throws std::invalid_argument naming an invalid setting of
  // config.runtime.
  explicit Runtime(Config config);

  // Runs `root` as the root fiber of a new simulation with the seed, and
  // returns its value, as spindle::Runtime::run does (the same shutdown, the
  // same rethrow of the first failure). Each run starts afresh: the same
  // virtual start time, the generator from the seed.
  template <class F>
  SpawnResult<F> run(F&& root) {
    last_.emplace(seed_);
    detail::Simulation::VirtualTime virtual_time(*last_);
    return detail::run_fiber(detail::make_sim_scheduler(config_, *last_), std::forward<F>(root),
                             metrics_, live_);
  }

  std::uint64_t seed() const noexcept { return seed_; }
  const spindle::Config& config() const noexcept { return config_; }

  // Of the latest run (0 before the first): the digest of its events, how
  // many there were (fiber turns), and the virtual time it took.
  std::uint64_t digest() const noexcept { return last_ ? last_->digest() : 0; }
  std::uint64_t steps() const noexcept { return last_ ? last_->steps() : 0; }
  std::chrono::nanoseconds elapsed() const noexcept;

  // The latest run's metrics, as spindle::Runtime::metrics_text().
  std::string metrics_text() const { return metrics_.text(); }

 private:
  std::uint64_t seed_;
  spindle::Config config_;
  std::optional<detail::Simulation> last_;
  detail::MetricsCell metrics_;
  detail::LiveScheduler live_;
};

}  // namespace spindle::sim
