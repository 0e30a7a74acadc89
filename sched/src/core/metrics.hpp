// Metrics: one Runtime::run's Prometheus state: the user registry, the task
// records behind runtime_tasks_*, the per-worker counter slots behind the
// other runtime_* metrics, and the collector that sums them at scrape time.
#pragma once

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "spindle/sched/detail/core.hpp"
#include "spindle/sched/detail/metrics.hpp"
#include "spindle/sched/runtime_counter.hpp"

namespace spindle::detail {

class GlobalQueue;

// Adds `n` to a counter that only the calling thread writes: a relaxed load
// and store, no read-modify-write. Readers (scrapes) load it relaxed.
inline void bump(std::atomic<std::uint64_t>& c, std::uint64_t n) noexcept {
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

// Whether a task is the root: the `kind` label of runtime_tasks_* (its
// `execution` label is its Placement).
enum class TaskKind : std::uint8_t { kRoot, kTask };

// One series of runtime_tasks_spawned_total / runtime_tasks_running: the
// tasks of one (name, execution, kind). Interned once, never freed before its
// Metrics; a fiber or blocking task points at its record from launch to exit.
//
// Slot i (i < pool workers) is written only by pool worker i (bump()); the
// last slot is shared by every other thread (fetch_add). A task's spawn and
// its finish may land in different slots: only the sums mean anything.
struct TaskRecord {
  struct alignas(64) Slot {
    std::atomic<std::uint64_t> spawned{0};
    std::atomic<std::uint64_t> finished{0};
  };

  // `shared`: the index of the shared slot (the number of pool workers).
  TaskRecord(std::string_view n, Placement e, TaskKind k, std::size_t shared)
      : name(n),
        execution(e),
        kind(k),
        shared_slot(shared),
        slot(std::make_unique<Slot[]>(shared + 1)) {}

  bool matches(std::string_view n, Placement e, TaskKind k) const noexcept {
    return execution == e && kind == k && name == n;
  }

  const std::string name;
  const Placement execution;
  const TaskKind kind;
  const std::size_t shared_slot;
  std::unique_ptr<Slot[]> slot;
};

// The scheduler's own counters, kept per worker (a single writer each, so a
// bump is a relaxed load and store on the worker's own cache line) and summed
// at scrape time. The layers above declare theirs as RuntimeCounters.
enum class Stat : std::uint8_t {
  kWorkerParks,
  kSteals,
  kHandOvers,          // lone I/O-woken fibers passed to a worker spinning on its own I/O
  kPendingOperations,  // a gauge the worker stores after each I/O service
  kIoLimitRefusals,
  kPooledFallbacks,  // pooled receives that took a buffer of their own
  kCount,
};
inline constexpr std::size_t kStatCount = static_cast<std::size_t>(Stat::kCount);

// Adds `n` to `stat` of the runtime whose worker runs this thread; dropped off
// a worker. Never blocks, never allocates.
void count(Stat stat, std::uint64_t n = 1) noexcept;

// The counters of one worker (or the shared slot): the Stats at their own
// index, then declared runtime counter `slot` at declared(slot). Single writer
// per slot, except the shared one (fetch_add).
struct alignas(64) StatSlot {
  static constexpr std::size_t kValues = kStatCount + kMaxRuntimeCounters;
  static constexpr std::size_t index(Stat s) noexcept { return static_cast<std::size_t>(s); }
  static constexpr std::size_t declared(std::size_t slot) noexcept { return kStatCount + slot; }

  std::array<std::atomic<std::uint64_t>, kValues> value{};

  void add(std::size_t i, std::uint64_t n) noexcept { bump(value[i], n); }
  void add(Stat s, std::uint64_t n) noexcept { add(index(s), n); }
  void set(Stat s, std::uint64_t v) noexcept {
    value[index(s)].store(v, std::memory_order_relaxed);
  }
  void add_shared(std::size_t i, std::uint64_t n) noexcept {
    value[i].fetch_add(n, std::memory_order_relaxed);
  }
  std::uint64_t get(std::size_t i) const noexcept {
    return value[i].load(std::memory_order_relaxed);
  }
  std::uint64_t get(Stat s) const noexcept { return get(index(s)); }
};

// Thread-safe. Owned by the Scheduler (and by the Runtime's MetricsCell, so
// the final values stay readable after run() returns); outlives every worker.
// As a Collectable it yields the runtime_* families, summed at each Collect().
class Metrics final : public prometheus::Collectable {
 public:
  // `io_backend`: the runtime's I/O backend, a static string ("io_uring").
  Metrics(std::size_t pool_workers, const char* io_backend);
  ~Metrics() override;
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  std::size_t pool_workers() const noexcept { return pool_workers_; }

  // The record of (name, execution, kind), created on first use. Takes a mutex:
  // workers call it through their small cache (Worker::task_record).
  TaskRecord* intern(std::string_view name, Placement execution, TaskKind kind);

  // Counter slots: pool worker i's for its life; a dedicated worker's from
  // acquire to release (which folds it into the shared slot); the shared one.
  StatSlot& pool_slot(std::size_t i) noexcept { return pool_slots_[i]; }
  StatSlot* acquire_dedicated_slot();
  void release_dedicated_slot(StatSlot* slot) noexcept;
  StatSlot& shared() noexcept { return shared_; }

  // runtime_global_queue_depth reads `q` until it is detached (the scheduler's
  // destructor); 0 afterwards.
  void attach_global_queue(const GlobalQueue* q) noexcept;

  // User metrics (Context::register_*).
  prometheus::Registry& registry() noexcept { return registry_; }

  // The runtime_* families, from the counters as they are now.
  std::vector<prometheus::MetricFamily> Collect() const override;
  // The text exposition of the runtime metrics and then the user metrics.
  std::string text() const;

 private:
  const std::size_t pool_workers_;
  const char* const io_backend_;
  std::unique_ptr<StatSlot[]> pool_slots_;
  StatSlot shared_;
  prometheus::Registry registry_;

  mutable std::mutex mutex_;  // guards everything below
  std::deque<TaskRecord> records_;
  std::unordered_map<std::string, TaskRecord*> by_key_;
  std::vector<std::unique_ptr<StatSlot>> dedicated_slots_;  // every slot ever made
  std::vector<StatSlot*> dedicated_free_;
  std::vector<StatSlot*> dedicated_active_;
  const GlobalQueue* global_ = nullptr;
};

// Counts one spawn or finish of a task of `record` in slot `slot`: the
// calling pool worker's index, or (any other thread) record->shared_slot.
// Null `record`: nothing.
void count_task_spawn(TaskRecord* record, std::size_t slot) noexcept;
void count_task_finish(TaskRecord* record, std::size_t slot) noexcept;

}  // namespace spindle::detail
