// Context::stop / stopped and StopSignal: stop resolves every signal with the
// first code, then waits for the signals taken before it; timeouts; plain
// threads through RuntimeHandle; abort; a runtime that is never stopped.
// (The reference's shutdown, shutdown_multiple_signals, shutdown_timeout,
// shutdown_multiple_stop_calls and unfulfilled_shutdown.)
//
// Assertions run on the root fiber (or the main thread) only: children record
// what they saw and the root checks it after joining them. Where a broken stop
// would hang, the stop gets a 10 s timeout as a hang guard.
#include <atomic>
#include <catch2/catch.hpp>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "runtime_harness.hpp"

using namespace std::chrono_literals;
using spindle::Clock;
using spindle::errc;
using spindle::StopSignal;
namespace tf = spindle::this_fiber;
using spindle::test::eventually;
using spindle::test::kSettle;

namespace {
constexpr auto kGuard = std::chrono::seconds(10);

// The error of `r`, or an empty error_code if it succeeded.
template <class R>
std::error_code error_of(const R& r) {
  return r.has_value() ? std::error_code{} : r.error();
}
}  // namespace

TEST_CASE("stop: resolves every signal with the code", "[stop]") {
  spindle::test::on_workers([] {
    constexpr int kFibers = 6;
    auto ctx = tf::context();
    std::atomic<int> started{0};
    std::atomic<int> resolved{0};
    std::vector<spindle::JoinHandle<std::vector<int>>> hs;
    for (int i = 0; i < kFibers; ++i) {
      // Taken here, before the stop: each fiber waits on two signals, one
      // taken separately and one copied.
      StopSignal a = ctx.stopped();
      StopSignal b = ctx.stopped();
      hs.push_back(spindle::spawn([&, a, b, c = StopSignal(a)]() mutable {
        started++;
        std::vector<int> codes;
        for (StopSignal* s : {&a, &b, &c}) {
          auto r = s->wait();
          codes.push_back(r ? *r : -1);
          if (s->value()) codes.push_back(*s->value());
        }
        resolved++;
        return codes;
      }));
    }
    REQUIRE(eventually([&] { return started.load() == kFibers; }));
    (void)tf::sleep_for(kSettle);
    CHECK(resolved.load() == 0);
    CHECK_FALSE(ctx.stopped().value().has_value());

    CHECK(ctx.stop(7, kGuard).has_value());
    CHECK(resolved.load() == kFibers);  // stop waited for every holder
    for (auto& h : hs) CHECK(h.join().value() == std::vector<int>{7, 7, 7, 7, 7, 7});
    CHECK(ctx.stopped().value() == 7);
  });
}

TEST_CASE("stop: a second stop with another code keeps the first", "[stop]") {
  spindle::test::on_workers([] {
    auto ctx = tf::context();
    auto rt = spindle::current_runtime();
    std::atomic<bool> started{false};
    auto waiter = spindle::spawn([&, s = ctx.stopped()]() mutable {
      started = true;
      return s.wait().value_or(-1);
    });
    REQUIRE(eventually([&] { return started.load(); }));
    CHECK(ctx.stop(3, kGuard).has_value());
    CHECK(waiter.join().value() == 3);
    CHECK(ctx.stop(5).has_value());
    CHECK(rt.stop(9, kGuard).has_value());
    // From another node of the tree: the stop is runtime-wide.
    auto child = spindle::spawn([] {
      auto r = tf::context().stop(11, kGuard);
      return r.has_value() ? tf::context().stopped().value().value_or(-1) : -2;
    });
    CHECK(child.join().value() == 3);
    CHECK(ctx.stopped().value() == 3);
    CHECK(rt.stopped().wait().value() == 3);
  });
}

TEST_CASE("stop: concurrent first stops agree on one code", "[stop]") {
  spindle::test::on_workers([] {
    constexpr int kStoppers = 8;
    auto ctx = tf::context();
    StopSignal before = ctx.stopped();
    std::atomic<bool> go{false};
    std::vector<spindle::JoinHandle<bool>> hs;
    for (int i = 0; i < kStoppers; ++i) {
      hs.push_back(spindle::spawn([&, i] {
        while (!go.load()) (void)tf::yield();
        return tf::context().stop(100 + i, kGuard).has_value();
      }));
    }
    go = true;
    // Every stopper waits for this root's signal: it must be resolved first.
    auto code = before.wait();
    REQUIRE(code.has_value());
    CHECK(*code >= 100);
    CHECK(*code < 100 + kStoppers);
    {
      StopSignal dropped = std::move(before);
    }
    for (auto& h : hs) CHECK(h.join().value());
    CHECK(ctx.stopped().value() == *code);
  });
}

TEST_CASE("stop: stopped after stop is already resolved and does not hold stop", "[stop]") {
  spindle::test::on_workers([] {
    auto ctx = tf::context();
    CHECK(ctx.stop(1).has_value());
    StopSignal s = ctx.stopped();
    CHECK(s.value() == 1);
    CHECK(s.wait().value() == 1);
    StopSignal copy = s;  // a copy of a non-holding signal holds nothing either
    CHECK(copy.value() == 1);
    // A zero timeout fails at once if anything holds the stop.
    CHECK(ctx.stop(2, 0ns).has_value());
    auto other = spindle::spawn([ctx] { return ctx.stopped().wait().value_or(-1); });
    CHECK(other.join().value() == 1);
  });
}

TEST_CASE("stop: with a timeout returns timed_out while a signal is held", "[stop][timeout]") {
  spindle::test::on_workers([] {
    auto ctx = tf::context();
    std::optional<StopSignal> held = ctx.stopped();
    std::optional<StopSignal> copy = *held;  // copies hold too
    auto start = Clock::now();
    auto r = ctx.stop(4, 100ms);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == errc::timed_out);
    CHECK(Clock::now() - start >= 100ms);
    // The stop is requested all the same.
    CHECK(held->value() == 4);
    CHECK(copy->wait().value() == 4);

    // A copy made after the stop from a holding signal holds as well, and a
    // move hands the hold over.
    std::optional<StopSignal> late_copy = *copy;
    held.reset();
    copy.reset();
    CHECK(error_of(ctx.stop(4, 20ms)) == errc::timed_out);
    StopSignal moved = std::move(*late_copy);
    late_copy.reset();  // the moved-from signal holds nothing
    CHECK(error_of(ctx.stop(4, 20ms)) == errc::timed_out);
    CHECK(moved.value() == 4);
    moved = ctx.stopped();  // assignment releases the old hold
    CHECK(moved.value() == 4);

    CHECK(ctx.stop(4, 100ms).has_value());
  });
}

TEST_CASE("stop: without a timeout waits until the last holder drops its signal", "[stop]") {
  spindle::test::on_workers([] {
    constexpr int kHolders = 5;
    auto ctx = tf::context();
    std::atomic<int> started{0};
    std::atomic<int> finished{0};
    std::vector<spindle::JoinHandle<void>> hs;
    for (int i = 0; i < kHolders; ++i) {
      hs.push_back(spindle::spawn([&, i, s = ctx.stopped()]() mutable {
        started++;
        (void)s.wait();
        // Some work after the stop resolved: stop() must still wait for it.
        for (int k = 0; k <= i; ++k) {
          (void)tf::sleep_for(1ms);
          (void)tf::yield();
        }
        finished++;
        // `s` goes when the body's callable is destroyed, after this.
      }));
    }
    // A plain thread holds one too, and drops it only after the fibers.
    std::atomic<bool> thread_started{false};
    std::atomic<bool> thread_saw_all_fibers{false};
    std::thread t([&, s = ctx.stopped()]() mutable {
      thread_started = true;
      (void)s.wait();
      while (finished.load() < kHolders) std::this_thread::yield();
      thread_saw_all_fibers = true;
      StopSignal drop = std::move(s);
    });
    REQUIRE(eventually([&] { return started.load() == kHolders && thread_started.load(); }));
    CHECK(ctx.stop(1).has_value());
    CHECK(finished.load() == kHolders);
    CHECK(thread_saw_all_fibers.load());
    for (auto& h : hs) CHECK(h.join().has_value());
    t.join();
  });
}

TEST_CASE("stop: a plain thread waits on a signal through RuntimeHandle", "[stop][thread]") {
  spindle::test::on_workers([] {
    auto rt = spindle::current_runtime();
    std::atomic<bool> started{false};
    std::atomic<int> thread_code{0};
    std::thread t([&, rt] {
      StopSignal s = rt.stopped();
      started = true;
      auto r = s.wait();
      thread_code = r ? *r : -1;
    });
    REQUIRE(eventually([&] { return started.load(); }));
    (void)tf::sleep_for(kSettle);
    CHECK(thread_code.load() == 0);
    CHECK(rt.stop(12, kGuard).has_value());  // returns once the thread dropped its signal
    CHECK(thread_code.load() == 12);
    t.join();
  });
}

TEST_CASE("stop: a plain thread stops while a fiber holds a signal", "[stop][thread]") {
  spindle::test::on_workers([] {
    auto rt = spindle::current_runtime();
    std::atomic<bool> started{false};
    std::atomic<bool> fiber_done{false};
    auto h = spindle::spawn([&, s = rt.stopped()]() mutable {
      started = true;
      auto r = s.wait();
      (void)tf::sleep_for(2ms);
      fiber_done = true;
      return r.value_or(-1);
    });
    REQUIRE(eventually([&] { return started.load(); }));
    bool stop_ok = false;
    bool saw_fiber_done = false;
    spindle::Event thread_done;
    std::thread t([&] {
      stop_ok = rt.stop(21, kGuard).has_value();  // blocks on a futex
      saw_fiber_done = fiber_done.load();
      thread_done.set();
    });
    CHECK(thread_done.wait().has_value());
    t.join();
    CHECK(stop_ok);
    CHECK(saw_fiber_done);
    CHECK(h.join().value() == 21);
  });
}

TEST_CASE("stop: an aborted fiber gets errc::aborted", "[stop][abort]") {
  spindle::test::on_workers([] {
    auto ctx = tf::context();
    std::atomic<bool> started{false};
    std::error_code wait_error;
    std::error_code stop_error;
    auto h = spindle::spawn([&, s = ctx.stopped()]() mutable {
      started = true;
      if (auto r = s.wait(); !r) wait_error = r.error();
      // In an aborted fiber stop() is refused before it requests anything.
      if (auto r = tf::context().stop(5, kGuard); !r) stop_error = r.error();
    });
    REQUIRE(eventually([&] { return started.load(); }));
    (void)tf::sleep_for(kSettle);  // let it park in wait()
    h.abort();
    CHECK(h.join().error() == errc::aborted);
    CHECK(wait_error == errc::aborted);
    CHECK(stop_error == errc::aborted);
    StopSignal held = ctx.stopped();
    CHECK_FALSE(held.value().has_value());

    // A fiber parked in stop() (this root holds `held`) is aborted out of it;
    // the stop stays requested.
    std::atomic<bool> stopping{false};
    std::error_code parked_stop_error;
    auto stopper = spindle::spawn([&] {
      stopping = true;
      if (auto r = tf::context().stop(6); !r) parked_stop_error = r.error();
    });
    REQUIRE(eventually([&] { return held.value().has_value(); }));
    (void)tf::sleep_for(kSettle);
    CHECK_FALSE(stopper.is_finished());
    stopper.abort();
    CHECK(stopper.join().error() == errc::aborted);
    CHECK(parked_stop_error == errc::aborted);
    CHECK(held.value() == 6);
    CHECK(held.wait().value() == 6);  // the root is not aborted
  });
}

TEST_CASE("stop: a signal that is never stopped stays unresolved", "[stop]") {
  // Written by the fibers and the thread, read after run() returns.
  std::atomic<int> fiber_started{0};
  std::error_code fiber_error;
  std::optional<StopSignal> kept;
  std::optional<spindle::RuntimeHandle> kept_runtime;
  std::atomic<bool> thread_started{false};
  std::atomic<bool> thread_returned{false};
  std::optional<spindle::Result<int>> thread_result;
  std::optional<std::thread> thread;
  spindle::test::run([&] {
    auto ctx = tf::context();
    kept = ctx.stopped();
    kept_runtime = spindle::current_runtime();
    // Never joined: the root ends while this waits, and shutdown aborts it.
    (void)spindle::spawn([&, s = ctx.stopped()]() mutable {
      fiber_started++;
      if (auto r = s.wait(); !r) fiber_error = r.error();
    });
    thread.emplace([&, s = ctx.stopped()]() mutable {
      thread_started = true;
      thread_result = s.wait();
      thread_returned = true;
    });
    REQUIRE(eventually([&] { return fiber_started.load() == 1 && thread_started.load(); }));
    (void)tf::sleep_for(kSettle);
    CHECK_FALSE(kept->value().has_value());
    CHECK_FALSE(thread_returned.load());
  });
  // The runtime ended without a stop: the thread's wait ends with closed.
  thread->join();
  REQUIRE(thread_result.has_value());
  REQUIRE_FALSE(thread_result->has_value());
  CHECK(thread_result->error() == errc::closed);
  CHECK(fiber_error == errc::aborted);
  CHECK_FALSE(kept->value().has_value());
  CHECK(error_of(kept->wait()) == errc::closed);
  CHECK(error_of(kept_runtime->stop(1, 0ns)) == errc::closed);
  CHECK_FALSE(kept_runtime->stopped().value().has_value());
}
