// Runtime counters: the runtime_* metrics owned by a layer above the
// scheduler (net/, storage/, or an application's own I/O layer). The layer
// declares each one once, as an object of static storage duration; the
// scheduler gives it a slot in every worker's counter block and sums those
// slots into metrics_text() under the declared name, help and type, in every
// runtime of the process.
//
//   const spindle::RuntimeCounter kReads{"runtime_storage_reads_total", "Blob reads."};
//   kReads.add();  // on a worker: a relaxed load and store on its own cache line
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

namespace spindle {

namespace detail {
class Metrics;
}

// How many RuntimeCounters and RuntimeGauges one process may declare: every
// worker keeps a slot for each, whether declared yet or not.
inline constexpr std::size_t kMaxRuntimeCounters = 32;

// A monotonic runtime metric (Prometheus type counter).
//
// Declaring is thread-safe and works from static initialisation (the registry
// needs no dynamic initialisation). It aborts with a message unless `name`
// matches runtime_[a-z0-9_]* and ends in _total, no other counter or gauge has
// that name, and fewer than kMaxRuntimeCounters are declared. `name` and `help`
// must live as long as the process (string literals): the registry keeps the
// views. A name must not be one of the scheduler's own runtime_* families.
//
// add() is thread-safe and never blocks or allocates. On a worker it adds to
// that worker's slot, which only the worker writes; off a worker (a plain or a
// blocking-pool thread) the value is dropped, so count on fibers.
class RuntimeCounter {
 public:
  RuntimeCounter(std::string_view name, std::string_view help);
  RuntimeCounter(const RuntimeCounter&) = delete;
  RuntimeCounter& operator=(const RuntimeCounter&) = delete;

  void add(std::uint64_t n = 1) const noexcept;

 private:
  std::size_t slot_;
};

// A runtime metric that goes up and down (Prometheus type gauge), moved only
// by Holds: its value is the number of Holds alive in the runtime. Declared as
// a RuntimeCounter is, except that `name` must not end in _total.
class RuntimeGauge {
 public:
  RuntimeGauge(std::string_view name, std::string_view help);
  RuntimeGauge(const RuntimeGauge&) = delete;
  RuntimeGauge& operator=(const RuntimeGauge&) = delete;

  // Holds +1 on the gauge in the runtime of the worker that made it, and
  // takes it back from whatever thread destroys it: onto that thread's worker
  // if it belongs to the same runtime, else onto the runtime's shared slot
  // (an atomic add). Made off a worker, it holds nothing. Not copyable; one
  // Hold is used by one thread at a time.
  class Hold {
   public:
    explicit Hold(const RuntimeGauge& gauge) noexcept;
    ~Hold();
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;

   private:
    std::shared_ptr<detail::Metrics> metrics_;  // null when made off a worker
    std::size_t slot_;
  };

 private:
  std::size_t slot_;
};

}  // namespace spindle
