// The metrics plumbing behind Context's labels and the runtime's Prometheus
// exposition: a context's Identity (label path and attributes) and the
// per-Runtime holder of the latest run's metrics (MetricsCell). Internal:
// users see Context::child/with_attribute/register_* and metrics_text().
#pragma once

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "spindle/base/guarded_cell.hpp"

namespace spindle::detail {

class Scheduler;
class Metrics;
struct TaskRecord;

// What a Context adds to the metrics it registers and the fibers it spawns.
// Immutable once built, shared by the contexts and fibers that carry it; the
// root context carries none (a null pointer).
struct Identity {
  std::string label;  // the label path joined with '_'; empty at the root
  // Prometheus labels, sorted by key, keys unique.
  std::vector<std::pair<std::string, std::string>> attributes;
};

// Throws std::invalid_argument naming `what` and `text` unless `text` matches
// [a-zA-Z][a-zA-Z0-9_]*.
void check_metric_label(std::string_view what, std::string_view text);

// Context::child / with_attribute: a new identity from `parent` (may be null).
std::shared_ptr<const Identity> child_identity(const Identity* parent, std::string_view label);
std::shared_ptr<const Identity> identity_with(const Identity* parent, std::string_view key,
                                              std::string value);

// Registers (or finds) the user metric `<label path>_<name>` of `scheduler`'s
// registry with the identity's attributes as labels. Thread-safe.
prometheus::Counter& register_counter(Scheduler& scheduler, const Identity* id,
                                      std::string_view name, std::string_view help);
prometheus::Gauge& register_gauge(Scheduler& scheduler, const Identity* id, std::string_view name,
                                  std::string_view help);
prometheus::Histogram& register_histogram(Scheduler& scheduler, const Identity* id,
                                          std::string_view name, std::string_view help,
                                          std::vector<double> buckets);

// The Prometheus text exposition of `scheduler`'s runtime and user metrics.
std::string metrics_text(Scheduler& scheduler);

// The metrics of a Runtime's latest run, readable from any thread while the
// run goes on and after it returns (the final values). Thread-safe. A copy
// starts empty: it belongs to another Runtime.
class MetricsCell {
 public:
  // Runtime::run, before the root starts: from now on text() reads `scheduler`'s.
  void attach(Scheduler& scheduler) noexcept;
  // Empty before the first run.
  std::string text() const;

 private:
  GuardedCell<std::shared_ptr<Metrics>> metrics_;
};

}  // namespace spindle::detail
