// Spinner: the reference's spinner.rs unit tests, one per behaviour. Budgets are
// checked against the formulas, relative to the calibrated iterations per us.
#include "park/spinner.hpp"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace spindle::detail {
namespace {

using std::chrono::microseconds;

// Budgets large enough that "exactly N checks" tests fit in one spin.
constexpr SpinnerConfig kWide{100, 1000, 10000};

TEST_CASE("spinner: calibration returns a nonzero rate, once per process", "[spinner]") {
  const std::uint64_t ipu = Spinner::iterations_per_us();
  REQUIRE(ipu > 0);
  REQUIRE(ipu <= 100'000);
  REQUIRE(Spinner::iterations_per_us() == ipu);
  Spinner s(SpinnerConfig{2, 10, 10});
  REQUIRE(s.min_budget() == 2 * ipu);
  REQUIRE(s.max_budget() == 10 * ipu);
  REQUIRE(s.budget() == s.min_budget());
  REQUIRE(s.near_miss_floor() == s.min_budget());
  REQUIRE_FALSE(s.disabled());
}

TEST_CASE("spinner: an immediate hit checks once and returns true", "[spinner]") {
  Spinner s(kWide);
  int calls = 0;
  REQUIRE(s.spin([&] {
    ++calls;
    return true;
  }));
  REQUIRE(calls == 1);
}

TEST_CASE("spinner: a miss checks exactly budget times and returns false", "[spinner]") {
  Spinner s(kWide);
  const std::uint64_t budget = s.budget();
  std::uint64_t calls = 0;
  REQUIRE_FALSE(s.spin([&] {
    ++calls;
    return false;
  }));
  REQUIRE(calls == budget);
}

TEST_CASE("spinner: a delayed hit stops after exactly 50 checks", "[spinner]") {
  Spinner s(kWide);
  REQUIRE(s.budget() >= 50);
  int calls = 0;
  REQUIRE(s.spin([&] { return ++calls == 50; }));
  REQUIRE(calls == 50);
}

TEST_CASE("spinner: a hit grows the budget by a quarter", "[spinner]") {
  Spinner s(kWide);
  const std::uint64_t b0 = s.budget();
  REQUIRE(s.spin([] { return true; }));
  REQUIRE(s.budget() == std::min(b0 + std::max<std::uint64_t>(b0 / 4, 1), s.max_budget()));
  REQUIRE(s.budget() > b0);
}

TEST_CASE("spinner: a miss shrinks the budget by an eighth toward the floor", "[spinner]") {
  Spinner s(SpinnerConfig{1, 10, 10});
  for (int i = 0; i < 20; ++i) REQUIRE(s.spin([] { return true; }));
  const std::uint64_t b0 = s.budget();
  REQUIRE(b0 == s.max_budget());
  const std::uint64_t floor = s.near_miss_floor() - s.near_miss_floor() / 16;
  REQUIRE_FALSE(s.spin([] { return false; }));
  REQUIRE(s.budget() ==
          std::max(b0 - std::max<std::uint64_t>(b0 / 8, 1), std::max(floor, s.min_budget())));
  REQUIRE(s.budget() < b0);
}

TEST_CASE("spinner: misses never take the budget below the minimum", "[spinner]") {
  Spinner s(SpinnerConfig{1, 4, 10});
  for (int i = 0; i < 10; ++i) REQUIRE(s.spin([] { return true; }));
  for (int i = 0; i < 100; ++i) REQUIRE_FALSE(s.spin([] { return false; }));
  REQUIRE(s.budget() == s.min_budget());
}

TEST_CASE("spinner: hits never take the budget above the maximum", "[spinner]") {
  Spinner s(SpinnerConfig{1, 4, 10});
  for (int i = 0; i < 100; ++i) REQUIRE(s.spin([] { return true; }));
  REQUIRE(s.budget() == s.max_budget());
}

TEST_CASE("spinner: a quick wake grows the budget and raises the floor", "[spinner]") {
  Spinner s(SpinnerConfig{2, 100, 50});
  const std::uint64_t ipu = Spinner::iterations_per_us();
  const std::uint64_t b0 = s.budget();
  const std::uint64_t f0 = s.near_miss_floor();
  s.on_wake(microseconds(40));
  REQUIRE(s.budget() == std::min(b0 + std::max<std::uint64_t>(b0 / 2, 1), s.max_budget()));
  REQUIRE(s.budget() > b0);
  REQUIRE(s.near_miss_floor() == std::min((3 * f0 + 40 * ipu) / 4, s.max_budget()));
  REQUIRE(s.near_miss_floor() > f0);
  // Exactly quick_wake still counts as quick.
  const std::uint64_t b1 = s.budget();
  s.on_wake(microseconds(50));
  REQUIRE(s.budget() == std::min(b1 + std::max<std::uint64_t>(b1 / 2, 1), s.max_budget()));
}

TEST_CASE("spinner: a slow wake changes nothing", "[spinner]") {
  Spinner s(SpinnerConfig{2, 100, 50});
  const std::uint64_t b0 = s.budget();
  const std::uint64_t f0 = s.near_miss_floor();
  s.on_wake(microseconds(51));
  s.on_wake(std::chrono::seconds(1));
  REQUIRE(s.budget() == b0);
  REQUIRE(s.near_miss_floor() == f0);
}

TEST_CASE("spinner: the near-miss floor decays by a sixteenth on each miss", "[spinner]") {
  Spinner s(SpinnerConfig{1, 100, 100});
  s.on_wake(microseconds(90));
  s.on_wake(microseconds(90));
  const std::uint64_t f0 = s.near_miss_floor();
  REQUIRE(f0 > s.min_budget());
  REQUIRE_FALSE(s.spin([] { return false; }));
  REQUIRE(s.near_miss_floor() == f0 - f0 / 16);
  const std::uint64_t f1 = s.near_miss_floor();
  REQUIRE_FALSE(s.spin([] { return false; }));
  REQUIRE(s.near_miss_floor() == f1 - f1 / 16);
  // The floor holds the budget up while it is above the minimum.
  REQUIRE(s.budget() >= f1 - f1 / 16);
}

TEST_CASE("spinner: the near-miss floor is clamped to the maximum budget", "[spinner]") {
  Spinner s(SpinnerConfig{1, 2, 1000});
  for (int i = 0; i < 20; ++i) s.on_wake(microseconds(1000));
  REQUIRE(s.near_miss_floor() == s.max_budget());
  REQUIRE(s.budget() == s.max_budget());
  // A negative duration counts as an instant wake and does not wrap.
  s.on_wake(std::chrono::nanoseconds(-5));
  REQUIRE(s.near_miss_floor() <= s.max_budget());
}

TEST_CASE("spinner: a budget above the maximum is rejected", "[spinner]") {
  REQUIRE_THROWS_AS(Spinner(SpinnerConfig{11, 10, 10}), std::invalid_argument);
  try {
    Spinner s(SpinnerConfig{11, 10, 10});
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    REQUIRE(what.find("idle_spinner.budget_us") != std::string::npos);
    REQUIRE(what.find("max_budget_us") != std::string::npos);
  }
  REQUIRE_NOTHROW(Spinner(SpinnerConfig{10, 10, 0}));
}

TEST_CASE("spinner: a disabled spinner never calls its condition", "[spinner]") {
  const SpinnerConfig cfg = GENERATE(SpinnerConfig{0, 0, 0}, SpinnerConfig{0, 10, 10});
  Spinner s(cfg);
  REQUIRE(s.disabled());
  REQUIRE(s.budget() == 0);
  int calls = 0;
  auto cond = [&] {
    ++calls;
    return true;
  };
  REQUIRE_FALSE(s.spin(cond));
  s.on_wake(microseconds(1));
  REQUIRE_FALSE(s.spin(cond));
  REQUIRE(calls == 0);
  REQUIRE(s.disabled());
}

TEST_CASE("spinner: many spinners share one calibration", "[spinner]") {
  std::vector<Spinner> spinners;
  for (int i = 0; i < 1000; ++i) spinners.emplace_back(SpinnerConfig{2, 10, 10});
  for (const auto& s : spinners) REQUIRE(s.min_budget() == spinners.front().min_budget());
}

}  // namespace
}  // namespace spindle::detail
