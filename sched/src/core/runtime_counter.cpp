#include "spindle/sched/runtime_counter.hpp"

#include "core/counter_registry.hpp"
#include "core/current.hpp"
#include "core/metrics.hpp"
#include "core/scheduler.hpp"
#include "core/worker.hpp"

namespace spindle {

RuntimeCounter::RuntimeCounter(std::string_view name, std::string_view help)
    : slot_(detail::declare_counter(name, help, detail::CounterKind::kCounter)) {}

void RuntimeCounter::add(std::uint64_t n) const noexcept {
  if (detail::Worker* w = detail::current_worker()) {
    w->stats().add(detail::StatSlot::declared(slot_), n);
  }
}

RuntimeGauge::RuntimeGauge(std::string_view name, std::string_view help)
    : slot_(detail::declare_counter(name, help, detail::CounterKind::kGauge)) {}

RuntimeGauge::Hold::Hold(const RuntimeGauge& gauge) noexcept : slot_(gauge.slot_) {
  if (detail::Worker* w = detail::current_worker()) {
    metrics_ = w->scheduler().metrics;
    w->stats().add(detail::StatSlot::declared(slot_), 1);
  }
}

// -1 as a wrapped unsigned: the scrape reads a gauge's sum as signed.
RuntimeGauge::Hold::~Hold() {
  if (!metrics_) return;
  const std::size_t i = detail::StatSlot::declared(slot_);
  detail::Worker* w = detail::current_worker();
  if (w && w->scheduler().metrics == metrics_) {
    w->stats().add(i, ~std::uint64_t{0});
  } else {
    metrics_->shared().add_shared(i, ~std::uint64_t{0});
  }
}

}  // namespace spindle
