// Interval: ticks on the grid start + k * period, each returned not before it
// is due, and the three missed-tick policies, checked by reasoning about due
// times (what tick() returns and next()) rather than by how long calls take.
//
// Assertions run on the root fiber (or the main thread) only.
#include <catch2/catch.hpp>
#include <thread>
#include <vector>

#include "runtime_harness.hpp"

using namespace std::chrono_literals;
using spindle::Clock;
using spindle::Deadline;
using spindle::errc;
using spindle::Interval;
using spindle::MissedTick;
namespace tf = spindle::this_fiber;
using spindle::test::eventually;
using spindle::test::kSettle;

namespace {

constexpr auto kPeriod = std::chrono::nanoseconds(10ms);

// Whether `t` lies on the grid start + k * period.
bool on_grid(Deadline t, Deadline start) { return (t - start) % kPeriod == 0ns; }

// An Interval that has returned its first tick (due at its start), then a
// sleep until more than three and a half periods after the start, so ticks 1,
// 2 and 3 are overdue. `woke` is when the sleep ended.
struct Overslept {
  Deadline start;
  Interval iv;
  Deadline woke;

  explicit Overslept(MissedTick missed)
      : start(Clock::now()), iv(start, kPeriod, missed), woke(start) {
    REQUIRE(iv.tick().value() == start);
    REQUIRE(tf::sleep_until(start + 3 * kPeriod + kPeriod / 2).has_value());
    woke = Clock::now();
  }
  // Whole ticks overdue at `woke`, the one at the start not counted.
  long overdue() const { return static_cast<long>((woke - start) / kPeriod); }
};

}  // namespace

TEST_CASE("interval: ticks fall on the grid and none returns before it is due", "[interval]") {
  spindle::test::on_workers([] {
    const Deadline start = Clock::now();
    Interval iv(start, kPeriod);
    CHECK(iv.period() == kPeriod);
    CHECK(iv.missed_tick() == MissedTick::kBurst);
    CHECK(iv.next() == start);
    for (int k = 0; k < 5; ++k) {
      const Deadline due = iv.tick().value();
      CHECK(Clock::now() >= due);
      CHECK(due >= start + k * kPeriod);
      CHECK(on_grid(due, start));
    }
    // Without a miss every policy keeps the grid; a plain thread ticks the same way.
    std::vector<Deadline> dues;
    std::vector<bool> not_early;
    const Deadline thread_start = Clock::now() + kPeriod;
    spindle::Event thread_done;
    std::thread t([&] {
      Interval tiv(thread_start, kPeriod, MissedTick::kSkip);
      for (int k = 0; k < 3; ++k) {
        const Deadline due = tiv.tick().value();
        not_early.push_back(Clock::now() >= due);
        dues.push_back(due);
      }
      thread_done.set();
    });
    CHECK(thread_done.wait().has_value());
    t.join();
    REQUIRE(dues.size() == 3);
    for (std::size_t k = 0; k < dues.size(); ++k) {
      CHECK(not_early[k]);
      CHECK(on_grid(dues[k], thread_start));
    }
    CHECK(dues[0] == thread_start);
    CHECK(dues[1] > dues[0]);
    CHECK(dues[2] > dues[1]);
  });
}

TEST_CASE("interval: burst returns every missed tick, the overdue ones at once", "[interval]") {
  spindle::test::on_workers(
      [] {
        Overslept o(MissedTick::kBurst);
        // Every overdue tick comes, in order, and each leaves the next one due
        // one period later: the overdue ones are due already, so none parks.
        long immediate = 0;
        for (long k = 1; k <= o.overdue(); ++k) {
          CHECK(o.iv.tick().value() == o.start + k * kPeriod);
          if (o.iv.next() <= o.woke) ++immediate;
        }
        CHECK(o.overdue() >= 3);
        CHECK(immediate == o.overdue() - 1);
        // Then on time again, on the same grid.
        const long k = o.overdue() + 1;
        const Deadline due = o.iv.tick().value();
        CHECK(due == o.start + k * kPeriod);
        CHECK(due > o.woke);
        CHECK(Clock::now() >= due);
      },
      {1, 2});
}

TEST_CASE("interval: delay returns one late tick, then restarts the period from it", "[interval]") {
  spindle::test::on_workers(
      [] {
        Overslept o(MissedTick::kDelay);
        CHECK(o.iv.tick().value() == o.start + kPeriod);  // the first overdue tick, late
        const Deadline returned = Clock::now();
        // The next one is a period after the late tick returned, not on the grid.
        const Deadline next = o.iv.next();
        CHECK(next >= o.woke + kPeriod);
        CHECK(next <= returned + kPeriod);
        const Deadline second = o.iv.tick().value();
        CHECK(second == next);
        CHECK(Clock::now() >= second);
        // Later ticks keep the new spacing (longer only if missed again).
        const Deadline third = o.iv.tick().value();
        CHECK(third >= second + kPeriod);
        CHECK(Clock::now() >= third);
      },
      {1, 2});
}

TEST_CASE("interval: skip returns one late tick, then drops the missed ones and keeps the grid",
          "[interval]") {
  spindle::test::on_workers(
      [] {
        Overslept o(MissedTick::kSkip);
        CHECK(o.iv.tick().value() == o.start + kPeriod);  // the first overdue tick, late
        const Deadline returned = Clock::now();
        // The next one is the first grid time after the late tick returned:
        // ticks 2 and 3 (and any later overdue one) are dropped.
        const Deadline next = o.iv.next();
        CHECK(on_grid(next, o.start));
        CHECK(next > o.woke);
        CHECK(next - kPeriod <= returned);
        CHECK(next >= o.start + (o.overdue() + 1) * kPeriod);
        const Deadline second = o.iv.tick().value();
        CHECK(second == next);
        CHECK(Clock::now() >= second);
        const Deadline third = o.iv.tick().value();
        CHECK(on_grid(third, o.start));
        CHECK(third > second);
      },
      {1, 2});
}

TEST_CASE("interval: abort ends tick with errc::aborted and consumes no tick",
          "[interval][abort]") {
  spindle::test::on_workers([] {
    std::atomic<bool> ticked{false};
    // Written by the fiber before it ends; read after join.
    std::error_code tick_error;
    Deadline next_after = {};
    const Deadline start = Clock::now();
    auto h = spindle::spawn([&] {
      Interval iv(start, 1h);
      (void)iv.tick();  // the first tick is due at once
      ticked = true;
      if (auto r = iv.tick(); !r) tick_error = r.error();
      next_after = iv.next();
    });
    REQUIRE(eventually([&] { return ticked.load(); }));
    (void)tf::sleep_for(kSettle);  // let it park
    h.abort();
    CHECK(h.join().error() == errc::aborted);
    CHECK(tick_error == errc::aborted);
    CHECK(next_after == start + 1h);
  });
}
