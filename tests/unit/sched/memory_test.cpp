#include <sys/resource.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "core/current.hpp"
#include "core/scheduler.hpp"
#include "core/worker.hpp"
#include "runtime_harness.hpp"
#include "skip.hpp"

using namespace std::chrono_literals;
namespace tf = spindle::this_fiber;

namespace {

// Peak resident set of this process (each ctest test is its own process).
std::size_t peak_rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoul(line.substr(6));
  }
  return 0;
}

std::size_t mapping_count() {
  std::ifstream maps("/proc/self/maps");
  std::size_t n = 0;
  std::string line;
  while (std::getline(maps, line)) ++n;
  return n;
}

std::size_t max_map_count() {
  std::ifstream f("/proc/sys/vm/max_map_count");
  std::size_t n = 0;
  f >> n;
  return n;
}

}  // namespace

TEST_CASE("a million spawns before the first yield keep peak RSS under 1 GiB", "[memory]") {
#if defined(SPINDLE_ASAN) || defined(SPINDLE_TSAN)
  SPINDLE_SKIP("peak RSS is meaningless under a sanitizer's shadow memory");
#endif
  std::size_t ran = spindle::test::run(
      [] {
        std::atomic<std::size_t> n{0};
        for (int i = 0; i < 1'000'000; ++i) spindle::spawn([&n] { n.fetch_add(1); });
        // Only now let them run, and wait for all.
        while (n.load() < 1'000'000) (void)tf::sleep_for(1ms);
        return n.load();
      },
      spindle::Config{.workers = 2});
  CHECK(ran == 1'000'000);
  CHECK(peak_rss_kib() < 1024 * 1024);
}

TEST_CASE("100,000 parked fibers fit with guard pages under the default vm.max_map_count",
          "[memory]") {
#if defined(SPINDLE_TSAN)
  SPINDLE_SKIP("TSan keeps per-fiber state far larger than a fiber");
#endif
  spindle::test::run([] {
    auto& sched = spindle::detail::current_worker()->scheduler();
    if (sched.stack_pool.guard_mode() != spindle::fiber::GuardMode::kMadvise) {
      SPINDLE_SKIP(
          "MADV_GUARD_INSTALL (Linux 6.13+) is missing: mprotect guards take two mappings per "
          "stack");
    }
    constexpr int kFibers = 100'000;
    spindle::Event release;
    spindle::WaitGroup parked(kFibers);
    spindle::WaitGroup finished(kFibers);
    for (int i = 0; i < kFibers; ++i) {
      spindle::spawn([&] {
        parked.done();
        (void)release.wait();
        finished.done();
      });
    }
    REQUIRE(parked.wait());
    (void)tf::sleep_for(1ms);  // the last ones reach release.wait()
    CHECK(sched.stack_pool.in_use() >= kFibers);
    CHECK(mapping_count() < max_map_count() / 2);
    release.set();
    // The woken fibers still take the event's lock on their way out: it must
    // outlive them.
    REQUIRE(finished.wait());
  });
}
