#include "spindle/sim/runtime.hpp"

namespace spindle::sim {

namespace {

spindle::Config simulated(spindle::Config c) {
  c.workers = 1;
  c.idle_spinner = IdleSpinner::disabled();
  c.stall_threshold = std::chrono::milliseconds(0);
  c.validate();
  return c;
}

}  // namespace

Runtime::Runtime(Config config) : seed_(config.seed), config_(simulated(config.runtime)) {}

std::chrono::nanoseconds Runtime::elapsed() const noexcept {
  if (!last_) return std::chrono::nanoseconds(0);
  return last_->now() - Deadline(detail::Simulation::kStart);
}

}  // namespace spindle::sim
