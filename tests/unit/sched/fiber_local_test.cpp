// FiberLocal<T>: one value per fiber, default-constructed on first use,
// destroyed (on the fiber) when the fiber ends, and kept across migrations.
//
// Assertions run on the root fiber (or the main thread) only: children record
// what they saw and the root checks it after joining them.
#include <atomic>
#include <catch2/catch.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "runtime_harness.hpp"

using namespace std::chrono_literals;
using spindle::Clock;
using spindle::errc;
using spindle::FiberLocal;
namespace tf = spindle::this_fiber;
using spindle::test::eventually;

namespace {

#if defined(SPINDLE_TSAN)
constexpr int kSteps = 60;
#else
constexpr int kSteps = 200;
#endif

// Counts its constructions and destructions, and where they ran.
struct Counted {
  static inline std::atomic<int> constructed{0};
  static inline std::atomic<int> destroyed{0};
  static inline std::atomic<int> destroyed_off_fiber{0};
  int value = 0;
  Counted() { constructed++; }
  ~Counted() {
    destroyed++;
    if (tf::id() == 0) destroyed_off_fiber++;
  }
  Counted(const Counted&) = delete;
  Counted& operator=(const Counted&) = delete;
};

// Long-lived, like thread_locals.
FiberLocal<int> g_number;
FiberLocal<std::string> g_name;
FiberLocal<Counted> g_counted;

// Keeps the workers busy (and stealing) until `stop`.
spindle::JoinHandle<void> spawn_busy(std::atomic<bool>& stop) {
  return spindle::spawn([&stop] {
    while (!stop.load()) {
      if (!tf::yield()) return;
    }
  });
}

}  // namespace

TEST_CASE("fiber_local: each fiber sees its own value", "[fiber_local]") {
  spindle::test::on_workers([] {
    constexpr int kFibers = 16;
    *g_number = -1;  // the root's own
    *g_name = "root";
    std::vector<spindle::JoinHandle<int>> hs;
    for (int i = 0; i < kFibers; ++i) {
      hs.push_back(spindle::spawn([i] {
        int mismatches = 0;
        if (*g_number != 0) ++mismatches;  // default-constructed on first get()
        if (!g_name->empty()) ++mismatches;
        int& mine = g_number.get();
        mine = i + 1;
        *g_name = "fiber " + std::to_string(i);
        for (int k = 0; k < 50; ++k) {
          (void)(k % 3 ? tf::yield() : tf::sleep_for(100us));
          if (*g_number != i + 1 || &g_number.get() != &mine) ++mismatches;
          if (*g_name != "fiber " + std::to_string(i)) ++mismatches;
        }
        return mismatches;
      }));
    }
    for (auto& h : hs) CHECK(h.join().value() == 0);
    CHECK(*g_number == -1);
    CHECK(*g_name == "root");
  });
}

TEST_CASE("fiber_local: a value is destroyed on its fiber when the fiber ends", "[fiber_local]") {
  const int constructed0 = Counted::constructed.load();
  const int destroyed0 = Counted::destroyed.load();
  spindle::test::on_workers([] {
    constexpr int kFibers = 20;
    const int c0 = Counted::constructed.load();
    const int d0 = Counted::destroyed.load();
    std::vector<spindle::JoinHandle<void>> hs;
    for (int i = 0; i < kFibers; ++i) {
      hs.push_back(spindle::spawn([i] {
        if (i % 2 == 0) g_counted->value = i;  // only the even ones create one
        (void)tf::sleep_for(200us);
      }));
    }
    for (auto& h : hs) CHECK(h.join().has_value());
    // Destroyed by the time join returns.
    CHECK(Counted::constructed.load() - c0 == kFibers / 2);
    CHECK(Counted::destroyed.load() - d0 == kFibers / 2);

    // An aborted fiber's value is destroyed too.
    std::atomic<bool> started{false};
    auto h = spindle::spawn([&] {
      g_counted->value = 1;
      started = true;
      (void)tf::sleep_for(10s);  // ends early with the abort
    });
    REQUIRE(eventually([&] { return started.load(); }));
    h.abort();
    CHECK(h.join().error() == errc::aborted);
    CHECK(Counted::constructed.load() - c0 == kFibers / 2 + 1);
    CHECK(Counted::destroyed.load() - d0 == kFibers / 2 + 1);

    g_counted->value = 7;  // the root's own, destroyed when the root ends
  });
  CHECK(Counted::constructed.load() - constructed0 == Counted::destroyed.load() - destroyed0);
  CHECK(Counted::constructed.load() - constructed0 == 3 * (20 / 2 + 2));
  CHECK(Counted::destroyed_off_fiber.load() == 0);
}

TEST_CASE("fiber_local: a fiber moving between workers keeps its own value", "[fiber_local]") {
  spindle::test::on_workers(
      [] {
        constexpr int kFibers = 8;
        std::atomic<bool> stop{false};
        std::vector<spindle::JoinHandle<void>> busy;
        for (int i = 0; i < 4; ++i) busy.push_back(spawn_busy(stop));
        std::vector<spindle::JoinHandle<int>> hs;
        for (int i = 0; i < kFibers; ++i) {
          hs.push_back(spindle::spawn([i] {
            int mismatches = 0;
            const int mine = 1000 + i;
            *g_number = mine;
            g_counted->value = mine;
            std::set<std::thread::id> threads;  // where it ran (not asserted: may be one)
            for (int k = 0; k < kSteps; ++k) {
              (void)(k % 4 ? tf::yield() : tf::sleep_for(50us));
              threads.insert(std::this_thread::get_id());
              if (*g_number != mine || g_counted->value != mine) ++mismatches;
            }
            return mismatches;
          }));
        }
        for (auto& h : hs) CHECK(h.join().value() == 0);
        stop = true;
        for (auto& b : busy) CHECK(b.join().has_value());
      },
      {2, 4});
}

TEST_CASE("fiber_local: get() outside a fiber throws std::logic_error", "[fiber_local]") {
  CHECK_THROWS_AS(g_number.get(), std::logic_error);
  bool thread_threw = false;
  std::thread t([&] {
    try {
      (void)g_number.get();
    } catch (const std::logic_error&) {
      thread_threw = true;
    }
  });
  t.join();
  CHECK(thread_threw);
}
