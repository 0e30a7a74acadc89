// select and try_select: one case fires, with its value; the others take
// nothing and leave no waiter behind, under races with timers, aborts and
// many senders, from fibers and plain threads.
//
// "No waiter left" is checked through unbuffered channels: try_send succeeds
// only if a receiver waits, try_recv only if a sender does.
#include <atomic>
#include <catch2/catch.hpp>
#include <thread>
#include <vector>

#include "runtime_harness.hpp"

using namespace std::chrono_literals;
using spindle::Channel;
using spindle::Clock;
using spindle::errc;
using spindle::EventCase;
using spindle::JoinCase;
using spindle::RecvCase;
using spindle::SendCase;
using spindle::StopCase;
using spindle::TimerCase;
namespace tf = spindle::this_fiber;
using spindle::test::eventually;
using spindle::test::kSettle;

namespace {

#if defined(SPINDLE_TSAN)
constexpr int kValues = 1'000;
#else
constexpr int kValues = 10'000;
#endif

// Whether a receiver waits on the unbuffered `ch` (then it gets `probe`).
bool receiver_waits(Channel<int>& ch, int probe = -1) { return !ch.try_send(probe).has_value(); }

}  // namespace

TEST_CASE("select: fires the ready case and takes only its value", "[select]") {
  spindle::test::on_workers([] {
    Channel<int> a(4), b(4);
    REQUIRE(a.send(1).has_value());
    RecvCase ra(a), rb(b);
    CHECK(spindle::select(ra, rb).value() == 0);
    CHECK(ra.result().value() == 1);
    CHECK(a.size() == 0);
    CHECK(b.size() == 0);
    REQUIRE(b.send(2).has_value());
    CHECK(spindle::select(ra, rb).value() == 1);
    CHECK(rb.result().value() == 2);
  });
}

TEST_CASE("select: waits until a case is ready; the others keep no waiter", "[select]") {
  spindle::test::on_workers([] {
    Channel<int> a(0), b(0);
    std::atomic<bool> started{false};
    auto selector = spindle::spawn([&] {
      RecvCase ra(a), rb(b);
      started = true;
      const std::size_t i = spindle::select(ra, rb).value();
      return i == 1 ? rb.result().value_or(-1) : -2;
    });
    REQUIRE(eventually([&] { return started.load(); }));
    (void)tf::sleep_for(kSettle);
    CHECK_FALSE(selector.is_finished());
    REQUIRE(b.send(42).has_value());  // unbuffered: returns once the select took it
    CHECK(selector.join().value() == 42);
    CHECK_FALSE(receiver_waits(a));
    CHECK_FALSE(receiver_waits(b));
  });
}

TEST_CASE("select: a send case hands its value to a receiver that comes later", "[select]") {
  spindle::test::on_workers([] {
    Channel<int> out(0), in(0);
    auto selector = spindle::spawn([&] {
      SendCase send(out, 7);
      RecvCase recv(in);
      const std::size_t i = spindle::select(send, recv).value();
      return i == 0 && send.result().has_value();
    });
    CHECK(out.recv().value() == 7);
    CHECK(selector.join().value());
    CHECK_FALSE(receiver_waits(in));
    CHECK_FALSE(out.try_recv().has_value());  // no sender left either
  });
}

TEST_CASE("select: a send case that does not fire keeps its value", "[select]") {
  spindle::test::on_workers([] {
    Channel<int> out(0), in(1);
    REQUIRE(in.send(5).has_value());
    SendCase send(out, 7);
    RecvCase recv(in);
    CHECK(spindle::select(send, recv).value() == 1);
    CHECK(recv.result().value() == 5);
    CHECK_FALSE(out.try_recv().has_value());
  });
}

TEST_CASE("select: a timer case fires when nothing else does, not before its deadline",
          "[select][timer]") {
  spindle::test::on_workers([] {
    Channel<int> a(0);
    RecvCase ra(a);
    const auto start = Clock::now();
    CHECK(spindle::select(ra, TimerCase::after(20ms)).value() == 1);
    CHECK(Clock::now() - start >= 20ms);
    CHECK_FALSE(receiver_waits(a));
    // Of two timers the earlier fires; a past deadline fires at once.
    CHECK(spindle::select(TimerCase::after(1h), TimerCase::after(5ms)).value() == 1);
    CHECK(spindle::select(ra, TimerCase(Clock::now() - 1s)).value() == 1);
  });
}

TEST_CASE("select: event, task end and stop signal cases", "[select]") {
  spindle::test::on_workers([] {
    Channel<int> never(0);
    RecvCase rn(never);

    spindle::Event e;
    auto setter = spindle::spawn([&] {
      (void)tf::sleep_for(5ms);
      e.set();
    });
    EventCase ev(e);
    CHECK(spindle::select(rn, ev).value() == 1);
    CHECK(e.is_set());
    setter.join().value();

    auto task = spindle::spawn([] {
      (void)tf::sleep_for(5ms);
      return 3;
    });
    JoinCase done(task);
    CHECK(spindle::select(rn, done).value() == 1);
    CHECK(task.is_finished());
    CHECK(task.join().value() == 3);

    auto ctx = tf::context();
    auto watcher = spindle::spawn([&, s = ctx.stopped()]() mutable {
      StopCase stop(s);
      RecvCase r(never);
      const std::size_t i = spindle::select(r, stop).value();
      return i == 1 ? stop.result().value_or(-1) : -2;
    });
    (void)tf::sleep_for(kSettle);
    CHECK_FALSE(watcher.is_finished());
    REQUIRE(ctx.stop(9, 10s).has_value());  // returns once the watcher dropped its signal
    CHECK(watcher.join().value() == 9);
    CHECK_FALSE(receiver_waits(never));
  });
}

TEST_CASE("select: a closed channel's receive case fires with errc::closed", "[select]") {
  spindle::test::on_workers([] {
    Channel<int> a(0), b(0);
    auto selector = spindle::spawn([&] {
      RecvCase ra(a), rb(b);
      const std::size_t i = spindle::select(ra, rb).value();
      return i == 0 && ra.result().error() == errc::closed;
    });
    (void)tf::sleep_for(kSettle);
    a.close();
    CHECK(selector.join().value());
    CHECK_FALSE(receiver_waits(b));
    SendCase sa(a, 1);
    CHECK(spindle::select(sa).value() == 0);
    CHECK(sa.result().error() == errc::closed);
  });
}

TEST_CASE("select: try_select fires a ready case or takes nothing", "[select]") {
  spindle::test::on_workers([] {
    Channel<int> a(1), b(0);
    RecvCase ra(a), rb(b);
    CHECK_FALSE(spindle::try_select(ra, rb).has_value());
    REQUIRE(a.try_send(4) == std::nullopt);
    CHECK(spindle::try_select(ra, rb) == std::optional<std::size_t>(0));
    CHECK(ra.result().value() == 4);
    CHECK_FALSE(spindle::try_select(ra, rb, TimerCase::after(1h)).has_value());
    CHECK_FALSE(receiver_waits(b));
  });
}

TEST_CASE("select: among ready cases each is chosen about as often", "[select][fair]") {
  spindle::test::on_workers(
      [] {
        constexpr int kRounds = 10'000;
        Channel<int> a(kRounds), b(kRounds);
        for (int i = 0; i < kRounds; ++i) {
          REQUIRE(a.try_send(i) == std::nullopt);
          REQUIRE(b.try_send(i) == std::nullopt);
        }
        int picked_a = 0;
        for (int i = 0; i < kRounds; ++i) {
          RecvCase ra(a), rb(b);
          picked_a += spindle::select(ra, rb).value() == 0 ? 1 : 0;
        }
        // Binomial(10'000, 0.5): 4'000 is twenty standard deviations away.
        CHECK(picked_a > 4'000);
        CHECK(picked_a < 6'000);
        CHECK(a.size() + b.size() == static_cast<std::size_t>(kRounds));
      },
      {1});
}

TEST_CASE("select: abort ends a blocked select with errc::aborted and leaves no waiter",
          "[select][abort]") {
  spindle::test::on_workers([] {
    Channel<int> a(0), b(0);
    std::atomic<bool> started{false};
    std::error_code select_error;  // written by the selector before it ends
    auto selector = spindle::spawn([&] {
      RecvCase ra(a), rb(b);
      started = true;
      auto r = spindle::select(ra, rb, TimerCase::after(1h));
      if (!r) select_error = r.error();
    });
    REQUIRE(eventually([&] { return started.load(); }));
    (void)tf::sleep_for(kSettle);
    selector.abort();
    CHECK(selector.join().error() == errc::aborted);
    CHECK(select_error == errc::aborted);
    CHECK_FALSE(receiver_waits(a));
    CHECK_FALSE(receiver_waits(b));
  });
}

TEST_CASE("select: racing a short timer against blocked senders loses and doubles nothing",
          "[select][timer]") {
  spindle::test::on_workers([] {
    Channel<int> a(0);
    std::atomic<long> sum{0};
    std::atomic<int> got{0};
    auto receiver = spindle::spawn([&] {
      RecvCase ra(a);
      int timeouts = 0;
      while (got.load() < kValues) {
        const std::size_t i = spindle::select(ra, TimerCase::after(20us)).value();
        if (i == 1) {
          ++timeouts;
          continue;
        }
        sum += ra.result().value();
        ++got;
      }
      return timeouts;
    });
    for (int i = 1; i <= kValues; ++i) REQUIRE(a.send(i).has_value());
    (void)receiver.join().value();
    CHECK(got.load() == kValues);
    CHECK(sum.load() == static_cast<long>(kValues) * (kValues + 1) / 2);
    CHECK_FALSE(receiver_waits(a));
  });
}

TEST_CASE("select: fibers and threads selecting over two channels get every value once",
          "[select][thread]") {
  spindle::test::on_workers(
      [] {
        constexpr int kSenders = 4;
        constexpr int kSelectors = 3;
        Channel<int> a(8), b(0);
        std::atomic<long> sum{0};
        std::atomic<int> got{0};
        auto drain = [&] {
          RecvCase ra(a), rb(b);
          for (;;) {
            const std::size_t i = spindle::select(ra, rb).value();
            auto r = i == 0 ? ra.result() : rb.result();
            if (!r) return;  // closed once every value was taken
            sum += *r;
            ++got;
          }
        };
        std::vector<spindle::JoinHandle<void>> fibers;
        for (int i = 0; i < kSelectors; ++i) fibers.push_back(spindle::spawn(drain));
        std::thread thread(drain);
        for (int s = 0; s < kSenders; ++s) {
          fibers.push_back(spindle::spawn([&, s] {
            for (int v = s; v < kValues; v += kSenders) {
              SendCase sa(a, v + 1), sb(b, v + 1);
              (void)spindle::select(sa, sb).value();
            }
          }));
        }
        REQUIRE(eventually([&] { return got.load() == kValues; }));
        a.close();
        b.close();
        for (auto& f : fibers) f.join().value();
        thread.join();
        CHECK(got.load() == kValues);
        CHECK(sum.load() == static_cast<long>(kValues) * (kValues + 1) / 2);
      },
      {1, 2, 4});
}

TEST_CASE("select: a plain thread outside any runtime waits with a timer case",
          "[select][thread]") {
  Channel<int> a(0);
  RecvCase ra(a);
  const auto start = Clock::now();
  CHECK(spindle::select(ra, TimerCase::after(10ms)).value() == 1);
  CHECK(Clock::now() - start >= 10ms);
  CHECK_FALSE(receiver_waits(a));
  std::thread sender([&] { (void)a.send(8); });
  CHECK(spindle::select(ra, TimerCase::after(1h)).value() == 0);
  CHECK(ra.result().value() == 8);
  sender.join();
}

TEST_CASE("select: aborting selectors while a sender hands values over loses and doubles nothing",
          "[select][abort]") {
  spindle::test::on_workers([] {
    constexpr int kReceivers = 4;
    Channel<int> a(0), never(0);
    std::vector<std::atomic<int>> seen(kValues + 1);
    auto sender = spindle::spawn([&] {
      for (int v = 1; v <= kValues; ++v) {
        if (!a.send(v)) return false;
      }
      return true;
    });
    auto receiver = [&] {
      RecvCase r(a), n(never);
      for (;;) {
        auto i = spindle::select(r, n);
        if (!i) return;  // aborted
        if (auto v = r.result()) seen[static_cast<std::size_t>(*v)]++;
      }
    };
    std::vector<spindle::JoinHandle<void>> receivers;
    for (int i = 0; i < kReceivers; ++i) receivers.push_back(spindle::spawn(receiver));
    // Abort the oldest receiver and start a new one, again and again, until
    // every value went over.
    std::size_t oldest = 0;
    while (!sender.is_finished()) {
      (void)tf::sleep_for(50us);
      receivers[oldest].abort();
      receivers.push_back(spindle::spawn(receiver));
      ++oldest;
    }
    CHECK(sender.join().value());
    for (std::size_t i = oldest; i < receivers.size(); ++i) receivers[i].abort();
    for (auto& h : receivers) (void)h.join();
    int once = 0;
    for (int v = 1; v <= kValues; ++v)
      once += seen[static_cast<std::size_t>(v)].load() == 1 ? 1 : 0;
    CHECK(once == kValues);
    CHECK_FALSE(receiver_waits(a));
  });
}
