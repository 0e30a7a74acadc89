// Semaphore: permits bound concurrency, FIFO hand-off, release(n), the timed
// and try calls, plain threads, abort.
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
using spindle::Clock;
using spindle::errc;
using spindle::Semaphore;
namespace tf = spindle::this_fiber;
using spindle::test::eventually;
using spindle::test::kSettle;

namespace {

#if defined(SPINDLE_TSAN)
constexpr int kRounds = 40;
#else
constexpr int kRounds = 200;
#endif

}  // namespace

TEST_CASE("semaphore: holders never exceed the permits", "[semaphore]") {
  spindle::test::on_workers([] {
    constexpr std::size_t kPermits = 3;
    constexpr int kFibers = 16;
    constexpr int kThreads = 2;
    Semaphore sem(kPermits);
    CHECK(sem.available() == kPermits);
    std::atomic<int> holders{0};
    std::atomic<int> max_holders{0};
    std::atomic<int> errors{0};
    std::atomic<long> entries{0};
    // Runs on fibers and on plain threads (tf:: calls fall back to the thread's).
    auto body = [&] {
      for (int i = 0; i < kRounds; ++i) {
        if (!sem.acquire()) {
          errors++;
          return;
        }
        const int now = ++holders;
        int seen = max_holders.load();
        while (now > seen && !max_holders.compare_exchange_weak(seen, now)) {
        }
        entries++;
        (void)(i % 2 ? tf::yield() : tf::sleep_for(50us));
        --holders;
        sem.release();
      }
    };
    spindle::WaitGroup threads_done(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        body();
        threads_done.done();
      });
    }
    std::vector<spindle::JoinHandle<void>> hs;
    for (int f = 0; f < kFibers; ++f) hs.push_back(spindle::spawn(body));
    for (auto& h : hs) CHECK(h.join().has_value());
    CHECK(threads_done.wait().has_value());
    for (auto& t : threads) t.join();
    CHECK(max_holders.load() >= 1);
    CHECK(max_holders.load() <= static_cast<int>(kPermits));
    CHECK(errors.load() == 0);
    CHECK(entries.load() == long{kFibers + kThreads} * kRounds);
    CHECK(holders.load() == 0);
    CHECK(sem.available() == kPermits);
  });
}

TEST_CASE("semaphore: release hands permits to waiters in arrival order", "[semaphore][fifo]") {
  // One worker: once a waiter has bumped `arrived`, it ran on to its park in
  // acquire() before the root could run again, so the queue order is known.
  spindle::test::on_workers(
      [] {
        constexpr int kWaiters = 6;
        Semaphore sem(0);
        std::atomic<int> arrived{0};
        std::atomic<int> passed{0};
        std::array<int, kWaiters> order{};
        std::vector<spindle::JoinHandle<void>> hs;
        for (int i = 0; i < kWaiters; ++i) {
          hs.push_back(spindle::spawn([&, i] {
            arrived++;
            if (sem.acquire()) order[static_cast<std::size_t>(passed++)] = i;
          }));
          REQUIRE(eventually([&] { return arrived.load() == i + 1; }));
        }
        sem.release();
        // Handed to waiter 0, not left for a try_acquire to take.
        CHECK(sem.available() == 0);
        CHECK_FALSE(sem.try_acquire());
        REQUIRE(eventually([&] { return passed.load() == 1; }));
        sem.release(3);
        CHECK(sem.available() == 0);
        REQUIRE(eventually([&] { return passed.load() == 4; }));
        sem.release(4);  // two waiters left: two permits stay
        CHECK(sem.available() == 2);
        for (auto& h : hs) REQUIRE(h.join().has_value());
        CHECK(passed.load() == kWaiters);
        CHECK(order == std::array<int, kWaiters>{0, 1, 2, 3, 4, 5});
      },
      {1});
}

TEST_CASE("semaphore: release(n) lets exactly n waiters through", "[semaphore]") {
  spindle::test::on_workers([] {
    constexpr int kWaiters = 5;
    Semaphore sem(0);
    std::atomic<int> started{0};
    std::atomic<int> passed{0};
    std::vector<spindle::JoinHandle<void>> hs;
    for (int i = 0; i < kWaiters; ++i) {
      hs.push_back(spindle::spawn([&] {
        started++;
        if (sem.acquire()) passed++;
      }));
    }
    REQUIRE(eventually([&] { return started.load() == kWaiters; }));
    sem.release(3);
    REQUIRE(eventually([&] { return passed.load() == 3; }));
    (void)tf::sleep_for(kSettle);  // a fourth, wrong pass would show by now
    CHECK(passed.load() == 3);
    CHECK(sem.available() == 0);
    sem.release(2);
    for (auto& h : hs) REQUIRE(h.join().has_value());
    CHECK(passed.load() == kWaiters);
    CHECK(sem.available() == 0);
    sem.release(1);
    CHECK(sem.available() == 1);
  });
}

TEST_CASE("semaphore: acquire_for times out with false and takes nothing", "[semaphore]") {
  spindle::test::on_workers([] {
    Semaphore sem(0);
    const auto deadline = Clock::now() + 20ms;
    auto r = sem.acquire_until(deadline);
    REQUIRE(r.has_value());
    CHECK_FALSE(*r);
    CHECK(Clock::now() >= deadline);
    auto r2 = sem.acquire_for(5ms);
    REQUIRE(r2.has_value());
    CHECK_FALSE(*r2);
    // The timed-out waiters left the queue: a later permit stays available.
    sem.release();
    CHECK(sem.available() == 1);
    CHECK(sem.acquire_for(10s).value());
    CHECK(sem.available() == 0);

    // A release during the wait ends it with true.
    auto h = spindle::spawn([&] {
      (void)tf::sleep_for(2ms);
      sem.release();
    });
    CHECK(sem.acquire_for(10s).value());
    CHECK(h.join().has_value());
    CHECK(sem.available() == 0);

    // A plain thread's timed acquire times out the same way.
    bool thread_timed_out = false;
    spindle::Event thread_done;
    std::thread t([&] {
      auto tr = sem.acquire_for(10ms);
      thread_timed_out = tr.has_value() && !*tr;
      thread_done.set();
    });
    CHECK(thread_done.wait().has_value());
    t.join();
    CHECK(thread_timed_out);
    CHECK(sem.available() == 0);
  });
}

TEST_CASE("semaphore: try_acquire takes only an available permit and release(n) adds n",
          "[semaphore]") {
  spindle::test::on_workers([] {
    Semaphore sem(2);
    CHECK(sem.try_acquire());
    CHECK(sem.try_acquire());
    CHECK_FALSE(sem.try_acquire());
    CHECK(sem.available() == 0);
    sem.release(3);
    CHECK(sem.available() == 3);
    auto other = spindle::spawn([&] { return sem.try_acquire(); });
    CHECK(other.join().value());
    CHECK(sem.available() == 2);
    CHECK(sem.try_acquire());
    CHECK(sem.try_acquire());
    CHECK_FALSE(sem.try_acquire());
    sem.release(0);
    CHECK(sem.available() == 0);
    sem.release();
    CHECK(sem.available() == 1);
    // With a permit there, a deadline already passed still gets it.
    CHECK(sem.acquire_until(Clock::now() - 1s).value());
    CHECK(sem.available() == 0);
  });
}

TEST_CASE("semaphore: works between plain threads with no runtime", "[semaphore][thread]") {
  Semaphore sem(0);
  std::atomic<int> got{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back([&] {
      if (sem.acquire()) got++;
    });
  }
  sem.release(3);
  for (auto& t : threads) t.join();
  CHECK(got.load() == 3);
  CHECK(sem.available() == 0);
  auto r = sem.acquire_for(5ms);
  REQUIRE(r.has_value());
  CHECK_FALSE(*r);
}

TEST_CASE("semaphore: abort ends an acquire with errc::aborted and loses no permit",
          "[semaphore][abort]") {
  spindle::test::on_workers([] {
    Semaphore sem(0);
    std::atomic<bool> started{false};
    // Written by the fiber before it ends; read after join.
    std::error_code acquire_error;
    std::error_code entry_error;
    std::error_code entry_timed_error;
    auto h = spindle::spawn([&] {
      started = true;
      if (auto r = sem.acquire(); !r) acquire_error = r.error();
      // Checked on entry, even with a permit there.
      sem.release();
      if (auto r = sem.acquire(); !r) entry_error = r.error();
      if (auto r = sem.acquire_for(10s); !r) entry_timed_error = r.error();
    });
    REQUIRE(eventually([&] { return started.load(); }));
    (void)tf::sleep_for(kSettle);  // let it park in acquire()
    h.abort();
    CHECK(h.join().error() == errc::aborted);
    CHECK(acquire_error == errc::aborted);
    CHECK(entry_error == errc::aborted);
    CHECK(entry_timed_error == errc::aborted);
    // The permit it released is still there, and the aborted waiter left the
    // queue: a new release is not handed to it.
    CHECK(sem.available() == 1);
    sem.release();
    CHECK(sem.available() == 2);
  });
}
