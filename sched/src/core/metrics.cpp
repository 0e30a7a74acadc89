// Metrics: labels, user metrics and the runtime's own metrics.
//
// Hot paths (spawn, exit, park, every storage and network call) touch only
// counters that one thread writes: each pool worker has a StatSlot, and each
// task record a slot per pool worker, bumped with a relaxed load and store.
// A spawn finds its record through a four-entry per-worker cache keyed by the
// name's content (Worker::task_record), so the interning mutex is taken only
// for a name the worker has not seen lately. Threads that are not pool
// workers (plain threads, blocking-pool threads, dedicated workers' spawns)
// add to one shared slot with fetch_add. A scrape takes the interning mutex,
// sums every slot (relaxed loads: a scrape is a snapshot, not a barrier) and
// serializes with prometheus-cpp's TextSerializer.
//
// The scheduler names only its own counters (Stat). The layers above declare
// theirs as RuntimeCounters and RuntimeGauges: a declaration takes a slot in
// the process-wide registry (counter_registry.cpp), every StatSlot has room
// for kMaxRuntimeCounters of them, so a bump costs what a Stat bump costs,
// and a scrape lists whatever the registry holds.
//
// Rejected: prometheus::Counter for the runtime metrics (an atomic
// read-modify-write on a shared cache line per spawn); one map lookup per
// spawn (a hash of the name on every spawn); per-worker tables keyed by
// record (a fiber finishing on another worker would need a lookup there).
// Declaring counters per Runtime: net and storage would need a hook into each
// run; a slot per process is the same in every runtime. Growing the StatSlots
// on declaration: a worker would race the reallocation; a fixed capacity
// costs a few idle cache lines per worker.
#include "core/metrics.hpp"

#include <fmt/format.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <numeric>
#include <span>
#include <stdexcept>

#include "core/counter_registry.hpp"
#include "core/current.hpp"
#include "core/global_queue.hpp"
#include "core/scheduler.hpp"
#include "core/worker.hpp"

namespace spindle::detail {
namespace {

bool valid_label(std::string_view s) noexcept {
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (s.empty() || !alpha(s[0])) return false;
  return std::all_of(s.begin() + 1, s.end(),
                     [&](char c) { return alpha(c) || digit(c) || c == '_'; });
}

// "runtime" and "runtime_..." name the runtime's own metrics.
bool reserved_prefix(std::string_view s) noexcept {
  return s == "runtime" || s.starts_with("runtime_");
}

std::string user_metric_name(const Identity* id, std::string_view name, bool counter) {
  check_metric_label("metric name", name);
  std::string full;
  if (id && !id->label.empty()) {
    full = id->label;
    full += '_';
    full += name;
  } else {
    if (reserved_prefix(name)) {
      throw std::invalid_argument(fmt::format(
          "spindle: metric name '{}' is reserved: the prefix 'runtime' names the runtime's own "
          "metrics",
          name));
    }
    full = name;
  }
  // OpenMetrics counters end in _total (prometheus-cpp does not add it).
  if (counter && !full.ends_with("_total")) full += "_total";
  return full;
}

prometheus::Labels labels_of(const Identity* id) {
  prometheus::Labels labels;
  if (id) {
    for (const auto& [k, v] : id->attributes) labels.emplace(k, v);
  }
  return labels;
}

const char* execution_name(Placement e) noexcept {
  switch (e) {
    case Placement::kPool:
      return "shared";
    case Placement::kDedicated:
      return "dedicated";
    case Placement::kBlocking:
      return "blocking";
  }
  return "";
}

std::string record_key(std::string_view name, Placement e, TaskKind k) {
  std::string key;
  key.reserve(name.size() + 2);
  key += static_cast<char>('0' + static_cast<int>(e));
  key += static_cast<char>('0' + static_cast<int>(k));
  key += name;
  return key;
}

// Registers one series of a user family: `builder` is prometheus::BuildCounter()
// or its like; `extra` goes to Family::Add after the labels (histogram buckets).
template <class Builder, class... Extra>
auto& register_series(Builder builder, Scheduler& s, const Identity* id, std::string_view name,
                      bool counter, std::string_view help, Extra&&... extra) {
  auto& family = builder.Name(user_metric_name(id, name, counter))
                     .Help(std::string(help))
                     .Register(s.metrics->registry());
  return family.Add(labels_of(id), std::forward<Extra>(extra)...);
}

}  // namespace

void check_metric_label(std::string_view what, std::string_view text) {
  if (!valid_label(text)) {
    throw std::invalid_argument(
        fmt::format("spindle: invalid {} '{}': must match [a-zA-Z][a-zA-Z0-9_]*", what, text));
  }
}

std::shared_ptr<const Identity> child_identity(const Identity* parent, std::string_view label) {
  check_metric_label("context label", label);
  const bool first = !parent || parent->label.empty();
  if (first && reserved_prefix(label)) {
    throw std::invalid_argument(fmt::format(
        "spindle: invalid context label '{}': the prefix 'runtime' is reserved for the runtime's "
        "own metrics",
        label));
  }
  auto id = std::make_shared<Identity>();
  if (parent) *id = *parent;
  if (!first) id->label += '_';
  id->label += label;
  return id;
}

std::shared_ptr<const Identity> identity_with(const Identity* parent, std::string_view key,
                                              std::string value) {
  check_metric_label("attribute key", key);
  auto id = std::make_shared<Identity>();
  if (parent) *id = *parent;
  auto& attrs = id->attributes;
  auto it = std::lower_bound(attrs.begin(), attrs.end(), key,
                             [](const auto& a, std::string_view k) { return a.first < k; });
  if (it != attrs.end() && it->first == key) {
    it->second = std::move(value);
  } else {
    attrs.emplace(it, std::string(key), std::move(value));
  }
  return id;
}

prometheus::Counter& register_counter(Scheduler& s, const Identity* id, std::string_view name,
                                      std::string_view help) {
  return register_series(prometheus::BuildCounter(), s, id, name, true, help);
}

prometheus::Gauge& register_gauge(Scheduler& s, const Identity* id, std::string_view name,
                                  std::string_view help) {
  return register_series(prometheus::BuildGauge(), s, id, name, false, help);
}

prometheus::Histogram& register_histogram(Scheduler& s, const Identity* id, std::string_view name,
                                          std::string_view help, std::vector<double> buckets) {
  return register_series(prometheus::BuildHistogram(), s, id, name, false, help,
                         std::move(buckets));
}

std::string metrics_text(Scheduler& s) { return s.metrics->text(); }

void count(Stat stat, std::uint64_t n) noexcept {
  if (Worker* w = current_worker()) w->stats().add(stat, n);
}

void MetricsCell::attach(Scheduler& s) noexcept { metrics_.store(s.metrics); }

std::string MetricsCell::text() const {
  const std::shared_ptr<Metrics> m = metrics_.load();
  return m ? m->text() : std::string();
}

namespace {

// Adds one to `counter` of `r`'s slot `slot`: an atomic add on the shared
// slot (many writers), a plain bump on a pool worker's (one writer).
void count_task(TaskRecord* r, std::size_t slot,
                std::atomic<std::uint64_t> TaskRecord::Slot::* counter) noexcept {
  if (!r) return;
  std::atomic<std::uint64_t>& c = r->slot[slot].*counter;
  if (slot == r->shared_slot) {
    c.fetch_add(1, std::memory_order_relaxed);
  } else {
    bump(c, 1);
  }
}

}  // namespace

void count_task_spawn(TaskRecord* r, std::size_t slot) noexcept {
  count_task(r, slot, &TaskRecord::Slot::spawned);
}

void count_task_finish(TaskRecord* r, std::size_t slot) noexcept {
  count_task(r, slot, &TaskRecord::Slot::finished);
}

Metrics::Metrics(std::size_t pool_workers, const char* io_backend)
    : pool_workers_(pool_workers),
      io_backend_(io_backend),
      pool_slots_(std::make_unique<StatSlot[]>(pool_workers)) {}

Metrics::~Metrics() = default;

TaskRecord* Metrics::intern(std::string_view name, Placement execution, TaskKind kind) {
  std::string key = record_key(name, execution, kind);
  std::lock_guard lock(mutex_);
  auto it = by_key_.find(key);
  if (it != by_key_.end()) return it->second;
  TaskRecord* r = &records_.emplace_back(name, execution, kind, pool_workers_);
  by_key_.emplace(std::move(key), r);
  return r;
}

StatSlot* Metrics::acquire_dedicated_slot() {
  std::lock_guard lock(mutex_);
  StatSlot* slot;
  if (!dedicated_free_.empty()) {
    slot = dedicated_free_.back();
    dedicated_free_.pop_back();
  } else {
    slot = dedicated_slots_.emplace_back(std::make_unique<StatSlot>()).get();
    dedicated_free_.reserve(dedicated_slots_.size());
  }
  dedicated_active_.push_back(slot);
  return slot;
}

void Metrics::release_dedicated_slot(StatSlot* slot) noexcept {
  std::lock_guard lock(mutex_);
  // Under the mutex, so a scrape sees the values either here or in shared_.
  for (std::size_t i = 0; i < StatSlot::kValues; ++i) {
    shared_.add_shared(i, slot->get(i));
    slot->value[i].store(0, std::memory_order_relaxed);
  }
  dedicated_active_.erase(std::find(dedicated_active_.begin(), dedicated_active_.end(), slot));
  dedicated_free_.push_back(slot);  // reserved in acquire: cannot throw
}

void Metrics::attach_global_queue(const GlobalQueue* q) noexcept {
  std::lock_guard lock(mutex_);
  global_ = q;
}

std::vector<prometheus::MetricFamily> Metrics::Collect() const {
  using prometheus::ClientMetric;
  using prometheus::MetricFamily;
  using prometheus::MetricType;
  const std::span<const DeclaredCounter> declared = declared_counters();
  constexpr std::size_t kOwnFamilies = 7;  // the families written below before the declared ones
  std::vector<MetricFamily> families;
  // No reallocation: `family` hands out references.
  families.reserve(kOwnFamilies + declared.size());
  auto family = [&](std::string name, std::string help, MetricType type) -> MetricFamily& {
    auto& f = families.emplace_back();
    f.name = std::move(name);
    f.help = std::move(help);
    f.type = type;
    return f;
  };
  auto sample = [](MetricFamily& f, double v, std::vector<ClientMetric::Label> labels = {}) {
    auto& m = f.metric.emplace_back();
    m.label = std::move(labels);
    if (f.type == MetricType::Counter) {
      m.counter.value = v;
    } else {
      m.gauge.value = v;
    }
  };
  {
    std::lock_guard lock(mutex_);
    auto& spawned = family("runtime_tasks_spawned_total",
                           "Tasks spawned, by name, kind and execution.", MetricType::Counter);
    auto& running = family("runtime_tasks_running",
                           "Tasks spawned and not yet finished, by name, kind and execution.",
                           MetricType::Gauge);
    for (const TaskRecord& r : records_) {
      // Finishes first: a finish seen here has its spawn counted before it.
      std::uint64_t fin = 0, spa = 0;
      for (std::size_t i = 0; i <= pool_workers_; ++i)
        fin += r.slot[i].finished.load(std::memory_order_relaxed);
      for (std::size_t i = 0; i <= pool_workers_; ++i)
        spa += r.slot[i].spawned.load(std::memory_order_relaxed);
      std::vector<ClientMetric::Label> labels = {
          {"name", r.name},
          {"kind", r.kind == TaskKind::kRoot ? "root" : "task"},
          {"execution", execution_name(r.execution)}};
      sample(spawned, static_cast<double>(spa), labels);
      sample(running, static_cast<double>(spa > fin ? spa - fin : 0), std::move(labels));
    }

    std::array<std::uint64_t, StatSlot::kValues> total{};
    std::uint64_t off_pool_parks = 0;
    auto add_slot = [&](const StatSlot& slot) {
      for (std::size_t i = 0; i < StatSlot::kValues; ++i) total[i] += slot.get(i);
    };
    for (std::size_t i = 0; i < pool_workers_; ++i) add_slot(pool_slots_[i]);
    add_slot(shared_);
    off_pool_parks += shared_.get(Stat::kWorkerParks);
    for (const StatSlot* slot : dedicated_active_) {
      add_slot(*slot);
      off_pool_parks += slot->get(Stat::kWorkerParks);
    }
    auto value = [&](std::size_t i) { return static_cast<double>(total[i]); };
    // A gauge's -1s are wrapped unsigned adds: its sum reads as signed.
    auto gauge = [&](std::size_t i) {
      return static_cast<double>(static_cast<std::int64_t>(total[i]));
    };

    sample(family("runtime_pending_operations", "I/O operations in flight.", MetricType::Gauge),
           gauge(StatSlot::index(Stat::kPendingOperations)));
    sample(family("runtime_io_backend_info",
                  "The I/O backend the runtime runs on (Config::io_backend), as its label.",
                  MetricType::Gauge),
           1.0, {{"backend", io_backend_}});
    auto& parks = family("runtime_worker_parks_total",
                         "Times a worker went to sleep with nothing to run.", MetricType::Counter);
    for (std::size_t i = 0; i < pool_workers_; ++i) {
      sample(parks, static_cast<double>(pool_slots_[i].get(Stat::kWorkerParks)),
             {{"worker", std::to_string(i)}});
    }
    if (off_pool_parks != 0) {
      sample(parks, static_cast<double>(off_pool_parks), {{"worker", "dedicated"}});
    }
    sample(family("runtime_steals_total", "Successful steals from another worker's run queue.",
                  MetricType::Counter),
           value(StatSlot::index(Stat::kSteals)));
    sample(family("runtime_io_hand_overs_total",
                  "Fibers an idle worker's I/O woke alone and that it passed to another worker "
                  "spinning idle on its own I/O.",
                  MetricType::Counter),
           value(StatSlot::index(Stat::kHandOvers)));
    sample(family("runtime_global_queue_depth", "Fibers waiting in the global queue.",
                  MetricType::Gauge),
           global_ ? static_cast<double>(global_->len()) : 0.0);

    sample(family("runtime_io_limit_refusals_total",
                  "I/O operations refused with errc::io_limit: their worker had "
                  "Config::max_io_in_flight in flight.",
                  MetricType::Counter),
           value(StatSlot::index(Stat::kIoLimitRefusals)));
    sample(family("runtime_pooled_receive_fallbacks_total",
                  "Pooled receives that took a buffer of their own: every buffer of their "
                  "worker's receive pool was held, or the backend has no pool.",
                  MetricType::Counter),
           value(StatSlot::index(Stat::kPooledFallbacks)));

    // The declared runtime counters, by name: the order does not depend on
    // the order in which the layers' static initialisers ran.
    std::vector<std::size_t> by_name(declared.size());
    std::iota(by_name.begin(), by_name.end(), std::size_t{0});
    std::sort(by_name.begin(), by_name.end(),
              [&](std::size_t a, std::size_t b) { return declared[a].name < declared[b].name; });
    for (const std::size_t slot : by_name) {
      const DeclaredCounter& c = declared[slot];
      const bool is_gauge = c.kind == CounterKind::kGauge;
      sample(family(std::string(c.name), std::string(c.help),
                    is_gauge ? MetricType::Gauge : MetricType::Counter),
             is_gauge ? gauge(StatSlot::declared(slot)) : value(StatSlot::declared(slot)));
    }
  }
  return families;
}

std::string Metrics::text() const {
  auto families = Collect();
  auto user = registry_.Collect();
  families.insert(families.end(), std::make_move_iterator(user.begin()),
                  std::make_move_iterator(user.end()));
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace spindle::detail
