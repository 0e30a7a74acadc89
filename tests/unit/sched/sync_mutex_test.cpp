// Mutex: mutual exclusion under contention, the std Lockable interface, FIFO
// hand-over, plain threads beside fibers, and abort (which must not end lock()).
//
// Assertions run on the root fiber (or the main thread) only: children record
// what they saw and the root checks it after joining them.
#include <atomic>
#include <catch2/catch.hpp>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime_harness.hpp"

using namespace std::chrono_literals;
using spindle::errc;
namespace tf = spindle::this_fiber;
using spindle::test::eventually;
using spindle::test::kSettle;

namespace {

#if defined(SPINDLE_TSAN)
constexpr int kRounds = 300;
#else
constexpr int kRounds = 3000;
#endif

// Long enough for a fiber that should stay blocked to run if it wrongly could.

// A lock/increment/unlock loop that counts overlapping holders. Works on a
// fiber and on a plain thread (tf::yield is std::this_thread::yield there).
struct Contended {
  spindle::Mutex m;
  long counter = 0;  // guarded by m
  std::atomic<int> inside{0};
  std::atomic<int> overlaps{0};

  void hammer(int rounds) {
    for (int i = 0; i < rounds; ++i) {
      m.lock();
      if (inside.fetch_add(1) != 0) overlaps.fetch_add(1);
      ++counter;
      if (i % 64 == 0) (void)tf::yield();  // hold it across a suspension
      inside.fetch_sub(1);
      m.unlock();
    }
  }
};

}  // namespace

TEST_CASE("mutex: a plain counter incremented by many fibers ends exact", "[mutex]") {
  spindle::test::on_workers([] {
    constexpr int kFibers = 16;
    Contended c;
    std::vector<spindle::JoinHandle<void>> hs;
    for (int f = 0; f < kFibers; ++f) hs.push_back(spindle::spawn([&] { c.hammer(kRounds); }));
    for (auto& h : hs) REQUIRE(h.join().has_value());
    CHECK(c.counter == long{kFibers} * kRounds);
    CHECK(c.overlaps.load() == 0);
    CHECK(c.m.try_lock());
    c.m.unlock();
  });
}

TEST_CASE("mutex: std::unique_lock and std::scoped_lock work with it", "[mutex]") {
  spindle::test::on_workers([] {
    spindle::Mutex a;
    spindle::Mutex b;
    {
      std::unique_lock lk(a);
      CHECK(lk.owns_lock());
      CHECK_FALSE(a.try_lock());
      auto probe = spindle::spawn([&] {
        std::unique_lock other(a, std::try_to_lock);
        return other.owns_lock();
      });
      CHECK_FALSE(probe.join().value());
      lk.unlock();
      CHECK_FALSE(lk.owns_lock());
      CHECK(lk.try_lock());
    }
    CHECK(a.try_lock());  // the unique_lock released it on destruction
    a.unlock();

    // Two fibers take both mutexes in opposite orders: std::lock's
    // lock-then-try_lock with back-off must not deadlock.
    long both = 0;  // guarded by a and b
    auto one = spindle::spawn([&] {
      for (int i = 0; i < kRounds / 4; ++i) {
        std::scoped_lock l(a, b);
        ++both;
        if (i % 16 == 0) (void)tf::yield();
      }
    });
    auto two = spindle::spawn([&] {
      for (int i = 0; i < kRounds / 4; ++i) {
        std::scoped_lock l(b, a);
        ++both;
        if (i % 16 == 0) (void)tf::yield();
      }
    });
    REQUIRE(one.join().has_value());
    REQUIRE(two.join().has_value());
    CHECK(both == 2 * (kRounds / 4));
    CHECK(a.try_lock());
    CHECK(b.try_lock());
    a.unlock();
    b.unlock();
  });
}

TEST_CASE("mutex: try_lock takes a free mutex and fails on a held one", "[mutex]") {
  spindle::test::on_workers([] {
    spindle::Mutex m;
    CHECK(m.try_lock());
    CHECK_FALSE(m.try_lock());  // not recursive
    auto other = spindle::spawn([&] { return m.try_lock(); });
    CHECK_FALSE(other.join().value());
    m.unlock();
    auto again = spindle::spawn([&] {
      const bool got = m.try_lock();
      if (got) m.unlock();
      return got;
    });
    CHECK(again.join().value());

    // Unlocking from another fiber than the one that locked is allowed.
    REQUIRE(m.try_lock());
    auto unlocker = spindle::spawn([&] { m.unlock(); });
    REQUIRE(unlocker.join().has_value());
    CHECK(m.try_lock());
    m.unlock();
  });
}

TEST_CASE("mutex: unlock hands the mutex to waiters in arrival order", "[mutex][fifo]") {
  // One worker: once a waiter has bumped `arrived`, it ran on to its park in
  // lock() before the root could run again, so the queue order is known.
  spindle::test::on_workers(
      [] {
        constexpr int kWaiters = 10;
        spindle::Mutex m;
        std::atomic<int> arrived{0};
        std::vector<int> order;  // guarded by m
        m.lock();
        std::vector<spindle::JoinHandle<void>> hs;
        for (int i = 0; i < kWaiters; ++i) {
          hs.push_back(spindle::spawn([&, i] {
            arrived.fetch_add(1);
            m.lock();
            order.push_back(i);
            m.unlock();
          }));
          REQUIRE(eventually([&] { return arrived.load() == i + 1; }));
        }
        m.unlock();
        // Handed straight to waiter 0: still locked, no barging.
        CHECK_FALSE(m.try_lock());
        for (auto& h : hs) REQUIRE(h.join().has_value());
        std::vector<int> expected;
        for (int i = 0; i < kWaiters; ++i) expected.push_back(i);
        CHECK(order == expected);
        CHECK(m.try_lock());
        m.unlock();
      },
      {1});
}

TEST_CASE("mutex: plain threads and fibers contend on one mutex", "[mutex][thread]") {
  spindle::test::on_workers([] {
    constexpr int kThreads = 2;
    constexpr int kFibers = 8;
    Contended c;
    spindle::WaitGroup threads_done(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        c.hammer(kRounds);
        threads_done.done();
      });
    }
    std::vector<spindle::JoinHandle<void>> hs;
    for (int f = 0; f < kFibers; ++f) hs.push_back(spindle::spawn([&] { c.hammer(kRounds); }));
    for (auto& h : hs) CHECK(h.join().has_value());
    // Park the root until the threads are done, so joining them cannot block a worker.
    CHECK(threads_done.wait().has_value());
    for (auto& t : threads) t.join();
    CHECK(c.counter == long{kThreads + kFibers} * kRounds);
    CHECK(c.overlaps.load() == 0);
  });
}

TEST_CASE("mutex: works between plain threads with no runtime", "[mutex][thread]") {
  constexpr int kThreads = 4;
  Contended c;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back([&] { c.hammer(kRounds); });
  for (auto& t : threads) t.join();
  CHECK(c.counter == long{kThreads} * kRounds);
  CHECK(c.overlaps.load() == 0);
}

TEST_CASE("mutex: abort does not end lock(): it returns only with the mutex held",
          "[mutex][abort]") {
  spindle::test::on_workers([] {
    spindle::Mutex m;
    std::atomic<bool> arrived{false};
    std::atomic<bool> got{false};
    // Written by the fiber before it ends; read after join.
    bool saw_aborted = false;
    bool held = false;
    bool relocked = false;
    m.lock();
    auto h = spindle::spawn([&] {
      arrived = true;
      m.lock();
      got = true;
      saw_aborted = tf::aborted();
      held = !m.try_lock();
      m.unlock();
      // Not interruptible even when aborted before the call.
      m.lock();
      relocked = true;
      m.unlock();
    });
    REQUIRE(eventually([&] { return arrived.load(); }));
    (void)tf::sleep_for(kSettle);  // let it park in lock()
    h.abort();
    (void)tf::sleep_for(kSettle);
    CHECK_FALSE(got.load());
    CHECK_FALSE(h.is_finished());
    m.unlock();
    auto r = h.join();
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == errc::aborted);
    CHECK(got.load());
    CHECK(saw_aborted);
    CHECK(held);
    CHECK(relocked);
    CHECK(m.try_lock());
    m.unlock();
  });
}
