// WaitGroup: wait for fibers and threads across workers, timed waits, abort.
// (A count going negative aborts the process; that is a death test, elsewhere.)
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
using spindle::WaitGroup;
namespace tf = spindle::this_fiber;
using spindle::test::eventually;

TEST_CASE("wait_group: wait returns after every done() from fibers and threads", "[wait_group]") {
  spindle::test::on_workers([] {
    constexpr int kFibers = 32;
    constexpr int kThreads = 2;
    WaitGroup wg;
    CHECK(wg.count() == 0);
    wg.add(kFibers);
    wg.add(kThreads);
    CHECK(wg.count() == kFibers + kThreads);
    std::atomic<int> finished{0};

    // A second waiter, on another fiber, is released too.
    int other_saw = -1;  // written by the waiter before it ends
    auto waiter = spindle::spawn([&] {
      auto r = wg.wait();
      other_saw = finished.load();
      return r.has_value();
    });
    std::vector<spindle::JoinHandle<void>> workers;
    for (int i = 0; i < kFibers; ++i) {
      workers.push_back(spindle::spawn([&, i] {
        for (int k = 0; k < i % 4; ++k) (void)(k % 2 ? tf::yield() : tf::sleep_for(200us));
        finished++;
        wg.done();
      }));
    }
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        std::this_thread::sleep_for(1ms);
        finished++;
        wg.done();
      });
    }
    REQUIRE(wg.wait().has_value());
    CHECK(finished.load() == kFibers + kThreads);
    CHECK(wg.count() == 0);
    CHECK(waiter.join().value());
    CHECK(other_saw == kFibers + kThreads);
    for (auto& w : workers) CHECK(w.join().has_value());
    for (auto& t : threads) t.join();

    // At zero a wait returns at once, even with a deadline already passed.
    CHECK(wg.wait().has_value());
    CHECK(wg.wait_until(Clock::now() - 1s).value());
    // And the group can be used again.
    wg.add(1);
    auto again = spindle::spawn([&] { wg.done(); });
    CHECK(wg.wait().has_value());
    CHECK(again.join().has_value());
  });
}

TEST_CASE("wait_group: the constructor's count is waited for", "[wait_group]") {
  spindle::test::on_workers([] {
    WaitGroup wg(3);
    CHECK(wg.count() == 3);
    std::atomic<int> done{0};
    std::vector<spindle::JoinHandle<void>> hs;
    for (int i = 0; i < 3; ++i) {
      hs.push_back(spindle::spawn([&] {
        (void)tf::sleep_for(1ms);
        done++;
        wg.done();
      }));
    }
    REQUIRE(wg.wait().has_value());
    CHECK(done.load() == 3);
    for (auto& h : hs) CHECK(h.join().has_value());
  });
}

TEST_CASE("wait_group: wait_until reports false when the deadline passes first", "[wait_group]") {
  spindle::test::on_workers([] {
    WaitGroup wg(1);
    const auto deadline = Clock::now() + 20ms;
    auto r = wg.wait_until(deadline);
    REQUIRE(r.has_value());
    CHECK_FALSE(*r);
    CHECK(Clock::now() >= deadline);
    CHECK(wg.count() == 1);

    // A done() before the deadline ends a timed wait with true.
    auto h = spindle::spawn([&] {
      (void)tf::sleep_for(2ms);
      wg.done();
    });
    auto r2 = wg.wait_until(Clock::now() + 10s);
    REQUIRE(r2.has_value());
    CHECK(*r2);
    CHECK(wg.count() == 0);
    CHECK(h.join().has_value());

    // A plain thread's timed wait times out the same way.
    wg.add(1);
    bool thread_timed_out = false;
    spindle::Event thread_done;
    std::thread t([&] {
      auto tr = wg.wait_until(Clock::now() + 10ms);
      thread_timed_out = tr.has_value() && !*tr;
      thread_done.set();
    });
    CHECK(thread_done.wait().has_value());
    t.join();
    CHECK(thread_timed_out);
    wg.done();
  });
}

TEST_CASE("wait_group: a plain thread waits for fibers", "[wait_group][thread]") {
  spindle::test::on_workers([] {
    constexpr int kFibers = 8;
    WaitGroup wg(kFibers);
    std::atomic<int> finished{0};
    std::atomic<int> thread_saw{-1};
    spindle::Event thread_done;
    std::thread t([&] {
      auto r = wg.wait();
      thread_saw = r.has_value() ? finished.load() : -2;
      thread_done.set();
    });
    std::vector<spindle::JoinHandle<void>> hs;
    for (int i = 0; i < kFibers; ++i) {
      hs.push_back(spindle::spawn([&] {
        (void)tf::sleep_for(1ms);
        finished++;
        wg.done();
      }));
    }
    for (auto& h : hs) CHECK(h.join().has_value());
    CHECK(thread_done.wait().has_value());
    t.join();
    CHECK(thread_saw.load() == kFibers);
  });
}

TEST_CASE("wait_group: works between plain threads with no runtime", "[wait_group][thread]") {
  constexpr int kThreads = 4;
  WaitGroup wg(kThreads);
  std::atomic<int> finished{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      finished++;
      wg.done();
    });
  }
  REQUIRE(wg.wait().has_value());
  CHECK(finished.load() == kThreads);
  for (auto& t : threads) t.join();
  WaitGroup never(1);
  auto r = never.wait_until(Clock::now() + 5ms);
  REQUIRE(r.has_value());
  CHECK_FALSE(*r);
}

TEST_CASE("wait_group: abort ends a wait with errc::aborted", "[wait_group][abort]") {
  spindle::test::on_workers([] {
    WaitGroup wg(1);
    std::atomic<bool> started{false};
    // Written by the fiber before it ends; read after join.
    std::error_code wait_error;
    std::error_code entry_error;
    std::error_code entry_timed_error;
    auto h = spindle::spawn([&] {
      started = true;
      if (auto r = wg.wait(); !r) wait_error = r.error();
      // Checked on entry, even where the count is zero and it would not block.
      wg.done();
      if (auto r = wg.wait(); !r) entry_error = r.error();
      if (auto r = wg.wait_until(Clock::now() + 10s); !r) entry_timed_error = r.error();
    });
    REQUIRE(eventually([&] { return started.load(); }));
    (void)tf::sleep_for(20ms);  // let it park in wait()
    h.abort();
    CHECK(h.join().error() == errc::aborted);
    CHECK(wait_error == errc::aborted);
    CHECK(entry_error == errc::aborted);
    CHECK(entry_timed_error == errc::aborted);
    CHECK(wg.count() == 0);
    CHECK(wg.wait().has_value());  // the root is not aborted
  });
}
