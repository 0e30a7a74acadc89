// RuntimeCounter and RuntimeGauge declared by a test: exposed in
// metrics_text() with their help and type, summed over every worker's slot,
// zero in each new runtime, and dropped off a worker.
#include "spindle/sched/runtime_counter.hpp"

#include <catch2/catch.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "exposition.hpp"
#include "runtime_harness.hpp"

using spindle::test::metric_value;
namespace tf = spindle::this_fiber;

namespace {

const spindle::RuntimeCounter kWidgets{"runtime_test_widgets_total", "Widgets made by the test."};
const spindle::RuntimeGauge kWidgetsHeld{"runtime_test_widgets_held", "Widgets held by the test."};

std::string scrape() { return spindle::current_runtime().metrics_text(); }

std::optional<double> widgets() { return metric_value(scrape(), "runtime_test_widgets_total"); }
std::optional<double> held() { return metric_value(scrape(), "runtime_test_widgets_held"); }

}  // namespace

TEST_CASE("a declared counter is exposed with its help and type and starts at zero",
          "[metrics][runtime_counter]") {
  spindle::test::on_workers([] {
    const auto text = scrape();
    CHECK_THAT(text,
               Catch::Contains("# HELP runtime_test_widgets_total Widgets made by the test."));
    CHECK_THAT(text, Catch::Contains("# TYPE runtime_test_widgets_total counter"));
    CHECK_THAT(text, Catch::Contains("# HELP runtime_test_widgets_held Widgets held by the test."));
    CHECK_THAT(text, Catch::Contains("# TYPE runtime_test_widgets_held gauge"));
    CHECK(metric_value(text, "runtime_test_widgets_total") == 0);
    CHECK(metric_value(text, "runtime_test_widgets_held") == 0);
  });
}

TEST_CASE("a declared counter sums the adds of every worker, dedicated ones included",
          "[metrics][runtime_counter]") {
  spindle::test::on_workers([] {
    // Fibers 1..kN add their number, yielding between two halves so that idle
    // workers steal some of them.
    constexpr int kN = 40;
    std::vector<spindle::JoinHandle<void>> hs;
    for (int i = 1; i <= kN; ++i) {
      hs.push_back(spindle::spawn([i] {
        kWidgets.add(static_cast<std::uint64_t>(i) / 2);
        (void)tf::yield();
        kWidgets.add(static_cast<std::uint64_t>(i) - static_cast<std::uint64_t>(i) / 2);
      }));
    }
    for (auto& h : hs) REQUIRE(h.join());
    CHECK(widgets() == kN * (kN + 1) / 2);

    // A dedicated worker's slot is folded into the shared one when it ends.
    REQUIRE(spindle::spawn_dedicated([] { kWidgets.add(1000); }).join());
    CHECK(widgets() == kN * (kN + 1) / 2 + 1000);

    // Off a worker an add is dropped.
    REQUIRE(spindle::spawn_blocking([] { kWidgets.add(7); }).join());
    CHECK(widgets() == kN * (kN + 1) / 2 + 1000);
  });
}

TEST_CASE("a gauge counts the holds alive, wherever they are released",
          "[metrics][runtime_counter]") {
  spindle::test::on_workers([] {
    std::optional<spindle::RuntimeGauge::Hold> a;
    a.emplace(kWidgetsHeld);
    CHECK(held() == 1);
    auto b =
        spindle::spawn([] { return std::make_unique<spindle::RuntimeGauge::Hold>(kWidgetsHeld); })
            .join()
            .value();
    CHECK(held() == 2);
    a.reset();  // on a worker of the same runtime
    CHECK(held() == 1);
    // Released on a blocking-pool thread: onto the runtime's shared slot.
    REQUIRE(spindle::spawn_blocking([&b] { b.reset(); }).join());
    CHECK(held() == 0);
    // Made off a worker, a hold holds nothing.
    REQUIRE(spindle::spawn_blocking([] {
              spindle::RuntimeGauge::Hold off(kWidgetsHeld);
              return 0;
            }).join() == 0);
    CHECK(held() == 0);
  });
}
