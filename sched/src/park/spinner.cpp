#include "park/spinner.hpp"

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <string>

namespace spindle::detail {
namespace {

// The calibration loop runs this many rounds and keeps the fastest: a round
// the thread was preempted in would make the budgets far too small.
constexpr std::uint64_t kCalibrationRounds = 5;
constexpr std::uint64_t kCalibrationIterations = 20'000;  // per round

// What spin() checks in its calibration loop: one relaxed atomic load, the
// usual shape of a wake condition.
std::atomic<bool> calibration_probe{false};

std::uint64_t calibrate() {
  using Clock = std::chrono::steady_clock;
  auto fastest = Clock::duration::max();
  for (std::uint64_t round = 0; round < kCalibrationRounds; ++round) {
    const auto start = Clock::now();
    for (std::uint64_t i = 0; i < kCalibrationIterations; ++i) {
      // relaxed: nothing ever sets the probe; the load stands in for cond().
      if (calibration_probe.load(std::memory_order_relaxed)) break;
      cpu_relax();
    }
    fastest = std::min(fastest, Clock::now() - start);
  }
  const auto elapsed_us = std::max<std::int64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(fastest).count(), 1);
  const std::uint64_t ipu = kCalibrationIterations / static_cast<std::uint64_t>(elapsed_us);
  // A very slow machine (or a sanitizer) could measure 0, which would silently
  // disable spinning; one iteration per microsecond is the floor. The ceiling is
  // kCalibrationIterations (elapsed_us >= 1), which on_wake() relies on.
  return std::max<std::uint64_t>(ipu, 1);
}

}  // namespace

std::uint64_t Spinner::iterations_per_us() {
  // Thread-safe static initialization: the first caller calibrates, every other
  // runtime of the process reuses the result.
  static const std::uint64_t ipu = calibrate();
  return ipu;
}

Spinner::Spinner(SpinnerConfig cfg)
    : iters_per_us_(0),
      min_budget_(0),
      max_budget_(0),
      quick_wake_(std::chrono::microseconds(cfg.quick_wake_us)),
      budget_(0),
      near_miss_floor_(0) {
  if (cfg.budget_us > cfg.max_budget_us) {
    throw std::invalid_argument(
        "spindle::Config: idle_spinner.budget_us (" + std::to_string(cfg.budget_us) +
        ") must not exceed idle_spinner.max_budget_us (" + std::to_string(cfg.max_budget_us) + ")");
  }
  iters_per_us_ = iterations_per_us();
  min_budget_ = cfg.budget_us * iters_per_us_;
  max_budget_ = cfg.max_budget_us * iters_per_us_;
  budget_ = min_budget_;
  near_miss_floor_ = min_budget_;
}

// Every step moves the budget by at least one iteration, so that a small
// budget (a slow calibration: a few iterations per microsecond) still adapts;
// a disabled spinner (budget 0) stays disabled.
std::uint64_t Spinner::step(std::uint64_t fraction) const noexcept {
  return budget_ == 0 ? 0 : std::max<std::uint64_t>(fraction, 1);
}

void Spinner::on_hit() { budget_ = std::min(budget_ + step(budget_ / 4), max_budget_); }

void Spinner::on_miss() {
  near_miss_floor_ -= near_miss_floor_ / 16;
  budget_ = std::max(budget_ - step(budget_ / 8), std::max(near_miss_floor_, min_budget_));
}

void Spinner::on_wake(std::chrono::nanoseconds parked) {
  if (parked > quick_wake_) return;
  budget_ = std::min(budget_ + step(budget_ / 2), max_budget_);
  const auto ns = static_cast<std::uint64_t>(std::max<std::int64_t>(parked.count(), 0));
  // No overflow: ns <= quick_wake_us * 1000 < 2^42 and iters_per_us_ <= kCalibrationIterations
  // (< 2^17) by construction, so every term below stays under 2^62.
  const std::uint64_t park_iters = ns * iters_per_us_ / 1000;
  near_miss_floor_ = std::min((3 * near_miss_floor_ + park_iters) / 4, max_budget_);
}

}  // namespace spindle::detail
