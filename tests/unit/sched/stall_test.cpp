// The stall detector: a fiber that keeps its worker for longer than
// Config::stall_threshold is reported once, by name; off when the threshold
// is zero.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime_harness.hpp"

using namespace std::chrono_literals;

namespace {

struct Reports {
  std::mutex mutex;
  std::vector<std::string> lines;
  std::vector<std::string> take() {
    std::lock_guard lock(mutex);
    return lines;
  }
};

// Blocks the worker thread for `d` without suspending the fiber.
void hog_worker(std::chrono::milliseconds d) {
  const auto end = spindle::Clock::now() + d;
  while (spindle::Clock::now() < end) ::usleep(1000);
}

std::vector<std::string> run_hog(std::chrono::milliseconds threshold) {
  Reports reports;
  spindle::Runtime rt(spindle::Config{.workers = 2,
                                      .stall_threshold = threshold,
                                      .on_log = [&](spindle::LogLevel level, std::string_view r) {
                                        std::lock_guard lock(reports.mutex);
                                        if (level == spindle::LogLevel::kWarning)
                                          reports.lines.emplace_back(r);
                                      }});
  rt.run([] { CHECK(spindle::spawn("hog", [] { hog_worker(300ms); }).join()); });
  return reports.take();
}

}  // namespace

TEST_CASE("stall detector: reports a fiber that keeps its worker once and names it") {
  const auto reports = run_hog(100ms);
  int naming_hog = 0;
  for (const auto& r : reports) {
    INFO(r);
    if (r.find("fiber") != std::string::npos && r.find("'hog'") != std::string::npos) ++naming_hog;
    CHECK(r.find("stall: worker ") == 0);
  }
  CHECK(naming_hog == 1);
}

TEST_CASE("stall detector: off when stall_threshold is zero") { CHECK(run_hog(0ms).empty()); }

TEST_CASE("stall detector: a negative or huge threshold is rejected naming the setting") {
  CHECK_THROWS_WITH(spindle::Runtime(spindle::Config{.stall_threshold = -1ms}),
                    Catch::Contains("stall_threshold"));
  CHECK_THROWS_AS(spindle::Runtime(spindle::Config{.stall_threshold = 2h}), std::invalid_argument);
}
