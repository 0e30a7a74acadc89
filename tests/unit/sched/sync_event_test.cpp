// Event: a manual-reset event; set releases every waiter (fibers and plain
// threads) and every later wait until reset; timed waits; abort.
//
// Assertions run on the root fiber (or the main thread) only: children record
// what they saw and the root checks it after joining them.
#include <atomic>
#include <catch2/catch.hpp>
#include <thread>
#include <vector>

#include "runtime_harness.hpp"

using namespace std::chrono_literals;
using spindle::Clock;
using spindle::errc;
using spindle::Event;
namespace tf = spindle::this_fiber;
using spindle::test::eventually;
using spindle::test::kSettle;

TEST_CASE("event: set releases every waiter, fibers and plain threads", "[event]") {
  spindle::test::on_workers([] {
    constexpr int kFibers = 8;
    constexpr int kThreads = 2;
    Event ev;
    CHECK_FALSE(ev.is_set());
    std::atomic<int> started{0};
    std::atomic<int> passed{0};
    std::atomic<int> errors{0};
    auto waiter = [&] {
      started++;
      if (ev.wait()) {
        passed++;
      } else {
        errors++;
      }
    };
    std::vector<spindle::JoinHandle<void>> hs;
    for (int i = 0; i < kFibers; ++i) hs.push_back(spindle::spawn(waiter));
    spindle::WaitGroup threads_done(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        waiter();
        threads_done.done();
      });
    }
    REQUIRE(eventually([&] { return started.load() == kFibers + kThreads; }));
    (void)tf::sleep_for(kSettle);
    CHECK(passed.load() == 0);
    ev.set();  // always, so the threads are released whatever happened above
    CHECK(ev.is_set());
    for (auto& h : hs) CHECK(h.join().has_value());
    CHECK(threads_done.wait().has_value());
    for (auto& t : threads) t.join();
    CHECK(passed.load() == kFibers + kThreads);
    CHECK(errors.load() == 0);

    // Once set, waits return at once, again and again, from fibers and threads.
    CHECK(ev.wait().has_value());
    CHECK(ev.wait().has_value());
    CHECK(ev.wait_for(0ns).value());
    CHECK(ev.wait_until(Clock::now() - 1s).value());
    auto later = spindle::spawn([&] { return ev.wait_for(10s).value_or(false); });
    CHECK(later.join().value());
    bool thread_saw = false;
    std::thread t([&] { thread_saw = ev.wait().has_value(); });
    t.join();  // the event is set: this does not block
    CHECK(thread_saw);
  });
}

TEST_CASE("event: reset makes later waits block until the next set", "[event]") {
  spindle::test::on_workers([] {
    Event ev;
    ev.reset();  // reset of an unset event: no effect
    CHECK_FALSE(ev.is_set());
    ev.set();
    ev.set();  // idempotent
    CHECK(ev.is_set());
    ev.reset();
    CHECK_FALSE(ev.is_set());
    auto r = ev.wait_for(5ms);
    REQUIRE(r.has_value());
    CHECK_FALSE(*r);

    std::atomic<bool> started{false};
    auto h = spindle::spawn([&] {
      started = true;
      return ev.wait().has_value();
    });
    REQUIRE(eventually([&] { return started.load(); }));
    (void)tf::sleep_for(kSettle);
    CHECK_FALSE(h.is_finished());
    ev.set();
    CHECK(h.join().value());
    CHECK(ev.is_set());
  });
}

TEST_CASE("event: wait_for times out with false", "[event]") {
  spindle::test::on_workers([] {
    Event ev;
    const auto deadline = Clock::now() + 20ms;
    auto r = ev.wait_until(deadline);
    REQUIRE(r.has_value());
    CHECK_FALSE(*r);
    CHECK(Clock::now() >= deadline);
    CHECK_FALSE(ev.is_set());

    // A set before the deadline ends the wait with true.
    auto setter = spindle::spawn([&] {
      (void)tf::sleep_for(2ms);
      ev.set();
    });
    CHECK(ev.wait_for(10s).value());
    CHECK(setter.join().has_value());

    // A plain thread's timed wait times out the same way.
    ev.reset();
    bool thread_timed_out = false;
    Event thread_done;
    std::thread t([&] {
      auto tr = ev.wait_for(10ms);
      thread_timed_out = tr.has_value() && !*tr;
      thread_done.set();
    });
    CHECK(thread_done.wait().has_value());
    t.join();
    CHECK(thread_timed_out);
  });
}

TEST_CASE("event: a plain thread sets and fibers wait", "[event][thread]") {
  spindle::test::on_workers([] {
    constexpr int kFibers = 6;
    Event ev;
    std::atomic<int> started{0};
    std::vector<spindle::JoinHandle<bool>> hs;
    for (int i = 0; i < kFibers; ++i) {
      hs.push_back(spindle::spawn([&] {
        started++;
        return ev.wait_for(10s).value_or(false);
      }));
    }
    REQUIRE(eventually([&] { return started.load() == kFibers; }));
    std::thread t([&] { ev.set(); });
    for (auto& h : hs) CHECK(h.join().value());
    t.join();
  });
}

TEST_CASE("event: works between plain threads with no runtime", "[event][thread]") {
  Event ev;
  std::atomic<int> passed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      if (ev.wait()) passed++;
    });
  }
  std::this_thread::sleep_for(5ms);
  CHECK(passed.load() == 0);
  ev.set();
  for (auto& t : threads) t.join();
  CHECK(passed.load() == 3);
  ev.reset();
  auto r = ev.wait_for(5ms);
  REQUIRE(r.has_value());
  CHECK_FALSE(*r);
}

TEST_CASE("event: abort ends a wait with errc::aborted", "[event][abort]") {
  spindle::test::on_workers([] {
    Event ev;
    std::atomic<bool> started{false};
    // Written by the fiber before it ends; read after join.
    std::error_code wait_error;
    std::error_code entry_error;
    std::error_code entry_timed_error;
    auto h = spindle::spawn([&] {
      started = true;
      if (auto r = ev.wait(); !r) wait_error = r.error();
      // Checked on entry, even on a set event.
      ev.set();
      if (auto r = ev.wait(); !r) entry_error = r.error();
      if (auto r = ev.wait_for(10s); !r) entry_timed_error = r.error();
    });
    REQUIRE(eventually([&] { return started.load(); }));
    (void)tf::sleep_for(kSettle);  // let it park in wait()
    h.abort();
    CHECK(h.join().error() == errc::aborted);
    CHECK(wait_error == errc::aborted);
    CHECK(entry_error == errc::aborted);
    CHECK(entry_timed_error == errc::aborted);
    CHECK(ev.is_set());
    CHECK(ev.wait().has_value());  // the root is not aborted
  });
}
