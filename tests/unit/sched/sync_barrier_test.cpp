// Barrier: phases release every participant only after the last arrival, one
// leader per phase, reuse across phases by fibers and plain threads, and
// timed-out or aborted waiters withdrawing their arrival.
//
// Assertions run on the root fiber (or the main thread) only: children record
// what they saw and the root checks it after joining them.
#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <thread>
#include <vector>

#include "runtime_harness.hpp"

using namespace std::chrono_literals;
using spindle::Barrier;
using spindle::Clock;
using spindle::errc;
namespace tf = spindle::this_fiber;
using spindle::test::eventually;
using spindle::test::kSettle;

namespace {

#if defined(SPINDLE_TSAN)
constexpr std::size_t kPhases = 30;
#else
constexpr std::size_t kPhases = 200;
#endif

}  // namespace

TEST_CASE("barrier: each phase waits for every participant and elects one leader",
          "[barrier][thread]") {
  spindle::test::on_workers([] {
    constexpr int kFibers = 6;
    constexpr int kThreads = 2;
    constexpr int kParticipants = kFibers + kThreads;
    Barrier barrier(kParticipants);
    CHECK(barrier.participants() == kParticipants);
    std::array<std::atomic<int>, kPhases> arrived{};
    std::array<std::atomic<int>, kPhases> leaders{};
    std::atomic<int> early{0};
    std::atomic<int> errors{0};
    // Runs on fibers and on plain threads.
    spindle::test::on_threads_and_fibers(kThreads, kFibers, [&](int) {
      for (std::size_t p = 0; p < kPhases; ++p) {
        arrived[p]++;
        auto r = barrier.arrive_and_wait();
        if (!r) {
          errors++;
          return;
        }
        if (*r) leaders[p]++;
        if (arrived[p].load() != kParticipants) early++;  // passed before the last arrival
      }
    });
    CHECK(errors.load() == 0);
    CHECK(early.load() == 0);
    std::size_t phases_with_one_leader = 0;
    for (auto& l : leaders) phases_with_one_leader += l.load() == 1 ? 1U : 0U;
    CHECK(phases_with_one_leader == kPhases);
    CHECK(barrier.phase() == kPhases);
  });
}

TEST_CASE("barrier: the last arrival leads and a single participant always leads", "[barrier]") {
  spindle::test::on_workers([] {
    Barrier solo(1);
    CHECK(solo.arrive_and_wait().value());
    CHECK(solo.arrive_and_wait_for(0ns).value());
    CHECK(solo.phase() == 2);

    Barrier pair(2);
    std::atomic<bool> arrived{false};
    auto first = spindle::spawn([&] {
      arrived = true;
      return pair.arrive_and_wait().value();
    });
    REQUIRE(eventually([&] { return arrived.load(); }));
    (void)tf::sleep_for(kSettle);  // let it park
    CHECK(pair.phase() == 0);
    CHECK(pair.arrive_and_wait().value());  // the root arrives last
    CHECK_FALSE(first.join().value());
    CHECK(pair.phase() == 1);
  });
}

TEST_CASE("barrier: a waiter that times out withdraws its arrival", "[barrier][thread]") {
  spindle::test::on_workers([] {
    Barrier barrier(2);
    const auto deadline = Clock::now() + 20ms;
    auto r = barrier.arrive_and_wait_until(deadline);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == errc::timed_out);
    CHECK(Clock::now() >= deadline);
    CHECK(barrier.phase() == 0);
    // A plain thread's timed wait times out the same way.
    std::error_code thread_error;
    spindle::Event thread_done;
    std::thread t([&] {
      if (auto tr = barrier.arrive_and_wait_for(5ms); !tr) thread_error = tr.error();
      thread_done.set();
    });
    CHECK(thread_done.wait().has_value());
    t.join();
    CHECK(thread_error == errc::timed_out);

    // Had either arrival stood, this one would complete the phase alone.
    std::atomic<bool> arrived{false};
    std::atomic<bool> passed{false};
    auto h = spindle::spawn([&] {
      arrived = true;
      auto pr = barrier.arrive_and_wait();
      passed = true;
      return pr.value();
    });
    REQUIRE(eventually([&] { return arrived.load(); }));
    (void)tf::sleep_for(kSettle);
    CHECK_FALSE(passed.load());
    CHECK(barrier.phase() == 0);
    CHECK(barrier.arrive_and_wait_for(10s).value());
    CHECK_FALSE(h.join().value());
    CHECK(barrier.phase() == 1);
  });
}

TEST_CASE("barrier: abort ends a wait with errc::aborted and withdraws the arrival",
          "[barrier][abort]") {
  spindle::test::on_workers([] {
    Barrier barrier(2);
    std::atomic<bool> arrived{false};
    // Written by the fiber before it ends; read after join.
    std::error_code wait_error;
    std::error_code entry_error;
    auto h = spindle::spawn([&] {
      arrived = true;
      if (auto r = barrier.arrive_and_wait(); !r) wait_error = r.error();
      // Checked on entry: an aborted fiber does not arrive.
      if (auto r = barrier.arrive_and_wait(); !r) entry_error = r.error();
    });
    REQUIRE(eventually([&] { return arrived.load(); }));
    (void)tf::sleep_for(kSettle);  // let it park
    h.abort();
    CHECK(h.join().error() == errc::aborted);
    CHECK(wait_error == errc::aborted);
    CHECK(entry_error == errc::aborted);
    CHECK(barrier.phase() == 0);
    // The barrier still needs two arrivals: the root's alone times out.
    auto alone = barrier.arrive_and_wait_for(5ms);
    REQUIRE_FALSE(alone.has_value());
    CHECK(alone.error() == errc::timed_out);
    auto other = spindle::spawn([&] { return barrier.arrive_and_wait().value(); });
    const bool root_led = barrier.arrive_and_wait().value();
    const bool other_led = other.join().value();
    CHECK(root_led != other_led);
    CHECK(barrier.phase() == 1);
  });
}

TEST_CASE("barrier: works between plain threads with no runtime", "[barrier][thread]") {
  constexpr int kThreads = 3;
  Barrier barrier(kThreads);
  std::atomic<int> leaders{0};
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int p = 0; p < 10; ++p) {
        auto r = barrier.arrive_and_wait();
        if (!r) {
          errors++;
        } else if (*r) {
          leaders++;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(errors.load() == 0);
  CHECK(leaders.load() == 10);
  CHECK(barrier.phase() == 10);
}
