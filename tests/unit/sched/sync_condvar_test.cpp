// CondVar: predicate waits, notify_one / notify_all counts, timeouts, abort,
// and plain threads on either side.
//
// Assertions run on the root fiber (or the main thread) only: children record
// what they saw and the root checks it after joining them.
#include <atomic>
#include <catch2/catch.hpp>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "runtime_harness.hpp"

using namespace std::chrono_literals;
using spindle::Clock;
using spindle::errc;
namespace tf = spindle::this_fiber;
using spindle::test::eventually;
using spindle::test::kSettle;

namespace {

#if defined(SPINDLE_TSAN)
constexpr int kItemsPerProducer = 500;
#else
constexpr int kItemsPerProducer = 5000;
#endif

}  // namespace

TEST_CASE("condvar: bounded producer/consumer with predicate waits delivers every item once",
          "[condvar]") {
  spindle::test::on_workers([] {
    constexpr int kProducers = 4;
    constexpr int kConsumers = 4;
    constexpr std::size_t kCapacity = 8;
    spindle::Mutex m;
    spindle::CondVar not_empty;
    spindle::CondVar not_full;
    std::deque<long> queue;           // guarded by m
    int producers_left = kProducers;  // guarded by m
    std::atomic<int> failed_waits{0};
    std::atomic<std::size_t> overfull{0};

    std::vector<spindle::JoinHandle<void>> producers;
    for (int p = 0; p < kProducers; ++p) {
      producers.push_back(spindle::spawn([&, p] {
        for (int i = 0; i < kItemsPerProducer; ++i) {
          std::unique_lock lk(m);
          if (!not_full.wait(lk, [&] { return queue.size() < kCapacity; })) failed_waits++;
          queue.push_back(long{p} * kItemsPerProducer + i + 1);
          if (queue.size() > kCapacity) overfull++;
          not_empty.notify_one();
        }
        std::lock_guard lk(m);
        if (--producers_left == 0) not_empty.notify_all();
      }));
    }
    std::vector<spindle::JoinHandle<std::pair<long, long>>> consumers;
    for (int c = 0; c < kConsumers; ++c) {
      consumers.push_back(spindle::spawn([&] {
        long sum = 0;
        long count = 0;
        for (;;) {
          std::unique_lock lk(m);
          if (!not_empty.wait(lk, [&] { return !queue.empty() || producers_left == 0; })) {
            failed_waits++;
            break;
          }
          if (queue.empty()) break;  // producers done and drained
          const long v = queue.front();
          queue.pop_front();
          not_full.notify_one();
          lk.unlock();
          sum += v;
          ++count;
        }
        return std::pair{sum, count};
      }));
    }
    for (auto& h : producers) REQUIRE(h.join().has_value());
    long sum = 0;
    long count = 0;
    for (auto& h : consumers) {
      auto r = h.join();
      REQUIRE(r.has_value());
      sum += r->first;
      count += r->second;
    }
    constexpr long kTotal = long{kProducers} * kItemsPerProducer;
    CHECK(count == kTotal);
    CHECK(sum == kTotal * (kTotal + 1) / 2);
    CHECK(failed_waits.load() == 0);
    CHECK(overfull.load() == 0);
    CHECK(queue.empty());
  });
}

TEST_CASE("condvar: notify_one wakes exactly one waiter and notify_all wakes the rest",
          "[condvar]") {
  spindle::test::on_workers([] {
    constexpr int kWaiters = 6;
    spindle::Mutex m;
    spindle::CondVar cv;
    // All guarded by m.
    int waiting = 0;  // waiters queued in cv (queued before they release m)
    int tokens = 0;   // how many waiters may leave
    int wakeups = 0;  // raw returns from wait()
    int passed = 0;
    int errors = 0;
    std::vector<spindle::JoinHandle<void>> hs;
    for (int i = 0; i < kWaiters; ++i) {
      hs.push_back(spindle::spawn([&] {
        std::unique_lock lk(m);
        for (;;) {
          ++waiting;
          auto r = cv.wait(lk);
          --waiting;
          if (!r) {
            ++errors;
            return;
          }
          ++wakeups;
          if (tokens > 0) {
            --tokens;
            ++passed;
            return;
          }
        }
      }));
    }
    auto locked = [&](auto f) {
      std::lock_guard lk(m);
      return f();
    };
    REQUIRE(eventually([&] { return locked([&] { return waiting == kWaiters; }); }));

    locked([&] {
      tokens = 1;
      cv.notify_one();
      return 0;
    });
    REQUIRE(eventually([&] { return locked([&] { return passed == 1; }); }));
    (void)tf::sleep_for(kSettle);  // a second, wrong wakeup would show by now
    locked([&] {
      CHECK(wakeups == 1);
      CHECK(waiting == kWaiters - 1);
      return 0;
    });

    locked([&] {
      tokens = kWaiters - 1;
      cv.notify_all();
      return 0;
    });
    for (auto& h : hs) REQUIRE(h.join().has_value());
    CHECK(wakeups == kWaiters);
    CHECK(passed == kWaiters);
    CHECK(errors == 0);
    CHECK(waiting == 0);
  });
}

TEST_CASE("condvar: notify with no waiter is not remembered", "[condvar]") {
  spindle::test::on_workers([] {
    spindle::Mutex m;
    spindle::CondVar cv;
    cv.notify_one();
    cv.notify_all();
    std::unique_lock lk(m);
    auto r = cv.wait_for(lk, 10ms);
    REQUIRE(r.has_value());
    CHECK_FALSE(*r);
  });
}

TEST_CASE("condvar: wait_for times out with false and the lock held again", "[condvar]") {
  spindle::test::on_workers([] {
    spindle::Mutex m;
    spindle::CondVar cv;
    std::unique_lock lk(m);
    const auto deadline = Clock::now() + 20ms;
    auto r = cv.wait_until(lk, deadline);
    REQUIRE(r.has_value());
    CHECK_FALSE(*r);
    CHECK(Clock::now() >= deadline);
    CHECK(lk.owns_lock());
    auto probe = spindle::spawn([&] { return m.try_lock(); });
    CHECK_FALSE(probe.join().value());  // really held, not just flagged

    auto r2 = cv.wait_for(lk, 5ms);
    REQUIRE(r2.has_value());
    CHECK_FALSE(*r2);
    CHECK(lk.owns_lock());

    // The predicate form returns the predicate's final value.
    bool flag = false;  // guarded by m
    auto r3 = cv.wait_for(lk, 5ms, [&] { return flag; });
    REQUIRE(r3.has_value());
    CHECK_FALSE(*r3);
    CHECK(lk.owns_lock());
    flag = true;
    auto r4 = cv.wait_for(lk, 10s, [&] { return flag; });
    REQUIRE(r4.has_value());
    CHECK(*r4);

    // A notify before the deadline ends the wait with true.
    bool ready = false;  // guarded by m
    auto notifier = spindle::spawn([&] {
      (void)tf::sleep_for(2ms);
      std::lock_guard g(m);
      ready = true;
      cv.notify_all();
    });
    auto r5 = cv.wait_for(lk, 10s, [&] { return ready; });
    REQUIRE(r5.has_value());
    CHECK(*r5);
    CHECK(lk.owns_lock());
    lk.unlock();
    REQUIRE(notifier.join().has_value());

    // A plain thread's timed wait times out the same way.
    bool thread_timed_out = false;
    bool thread_owns = false;
    spindle::Event thread_done;
    std::thread t([&] {
      std::unique_lock tl(m);
      auto tr = cv.wait_for(tl, 10ms);
      thread_timed_out = tr.has_value() && !*tr;
      thread_owns = tl.owns_lock();
      tl.unlock();
      thread_done.set();
    });
    CHECK(thread_done.wait().has_value());
    t.join();
    CHECK(thread_timed_out);
    CHECK(thread_owns);
  });
}

TEST_CASE("condvar: abort ends a wait with errc::aborted and the lock held again",
          "[condvar][abort]") {
  spindle::test::on_workers([] {
    spindle::Mutex m;
    spindle::CondVar cv;
    int waiting = 0;  // guarded by m
    std::atomic<bool> returned{false};
    // Written by the fiber before it ends; read after join.
    std::error_code wait_error;
    bool owns = false;
    bool held = false;
    std::error_code entry_error;
    std::error_code entry_timed_error;
    bool owns_after_entry = false;
    auto h = spindle::spawn([&] {
      std::unique_lock lk(m);
      ++waiting;
      auto r = cv.wait(lk, [] { return false; });
      returned = true;
      if (!r) wait_error = r.error();
      owns = lk.owns_lock();
      held = !m.try_lock();
      // Checked on entry: an aborted fiber's waits fail at once.
      auto again = cv.wait(lk);
      if (!again) entry_error = again.error();
      auto timed = cv.wait_for(lk, 10s);
      if (!timed) entry_timed_error = timed.error();
      owns_after_entry = lk.owns_lock() && !m.try_lock();
    });
    {
      std::unique_lock lk(m, std::defer_lock);
      REQUIRE(eventually([&] {
        lk.lock();
        if (waiting == 1) return true;
        lk.unlock();
        return false;
      }));
      // Holding m and seeing waiting == 1: the fiber is queued in cv.
      h.abort();
      (void)tf::sleep_for(kSettle);
      // Woken, but it cannot return before it has the mutex again.
      CHECK_FALSE(returned.load());
    }
    auto r = h.join();
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == errc::aborted);
    CHECK(returned.load());
    CHECK(wait_error == errc::aborted);
    CHECK(owns);
    CHECK(held);
    CHECK(entry_error == errc::aborted);
    CHECK(entry_timed_error == errc::aborted);
    CHECK(owns_after_entry);
    CHECK(m.try_lock());  // the fiber's unique_lock released it when it ended
    m.unlock();
  });
}

TEST_CASE("condvar: a plain thread waits and a fiber notifies, and the reverse",
          "[condvar][thread]") {
  spindle::test::on_workers([] {
    spindle::Mutex m;
    spindle::CondVar cv;
    int stage = 0;  // guarded by m
    std::atomic<bool> thread_ok{false};
    spindle::Event thread_done;
    std::thread t([&] {
      std::unique_lock lk(m);
      stage = 1;
      cv.notify_all();  // wakes the fiber below
      auto r = cv.wait(lk, [&] { return stage == 2; });
      thread_ok = r.has_value() && lk.owns_lock();
      stage = 3;
      cv.notify_all();
      lk.unlock();
      thread_done.set();
    });
    {
      std::unique_lock lk(m);
      auto r1 = cv.wait_for(lk, 10s, [&] { return stage == 1; });
      CHECK(r1.has_value());
      CHECK(r1.value_or(false));
      stage = 2;  // always set, so the thread is released whatever happened above
      cv.notify_one();
      auto r2 = cv.wait_for(lk, 10s, [&] { return stage == 3; });
      CHECK(r2.value_or(false));
    }
    CHECK(thread_done.wait().has_value());
    t.join();
    CHECK(thread_ok.load());
  });
}

TEST_CASE("condvar: works between plain threads with no runtime", "[condvar][thread]") {
  spindle::Mutex m;
  spindle::CondVar cv;
  int turn = 0;  // guarded by m
  constexpr int kRounds = 200;
  bool ok = true;
  // Two threads alternate turns: each waits for its parity.
  auto player = [&](int parity) {
    for (int i = 0; i < kRounds; ++i) {
      std::unique_lock lk(m);
      if (!cv.wait(lk, [&] { return turn % 2 == parity; })) ok = false;
      ++turn;
      cv.notify_all();
    }
  };
  std::thread a(player, 0);
  std::thread b(player, 1);
  a.join();
  b.join();
  CHECK(ok);
  CHECK(turn == 2 * kRounds);
}
