// oneshot<T>: one value once; recv parks until it is sent; dropping either end;
// the try_ and timed calls; abort; fibers and plain threads.
//
// Assertions run on the root fiber (or the main thread) only: children record
// what they saw and the root checks it after joining them.
#include <atomic>
#include <catch2/catch.hpp>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "abort_harness.hpp"
#include "runtime_harness.hpp"

using namespace std::chrono_literals;
using spindle::Clock;
using spindle::errc;
using spindle::OneshotReceiver;
using spindle::OneshotSender;
namespace tf = spindle::this_fiber;
using spindle::test::abort_before;
using spindle::test::abort_parked;
using spindle::test::eventually;
using spindle::test::kSettle;

namespace {

#if defined(SPINDLE_TSAN)
constexpr int kPairs = 500;
#else
constexpr int kPairs = 5'000;
#endif

}  // namespace

TEST_CASE("oneshot: recv parks until the value is sent, and only one value comes", "[oneshot]") {
  spindle::test::on_workers([] {
    auto [tx, rx] = spindle::oneshot<int>();
    auto receiver = spindle::spawn([&rx] {
      auto first = rx.recv();
      auto second = rx.recv();
      return std::pair{first, second};
    });
    (void)tf::sleep_for(kSettle);
    CHECK_FALSE(receiver.is_finished());
    CHECK_FALSE(tx.send(42).has_value());
    auto r = receiver.join();
    REQUIRE(r.has_value());
    REQUIRE(r->first.has_value());
    CHECK(*r->first == 42);
    REQUIRE_FALSE(r->second.has_value());
    CHECK(r->second.error() == errc::closed);

    // Sent before anyone receives: the value waits for the receive.
    auto [tx2, rx2] = spindle::oneshot<std::unique_ptr<int>>();
    CHECK_FALSE(rx2.try_recv().has_value());
    CHECK_FALSE(tx2.send(std::make_unique<int>(7)).has_value());
    auto got = rx2.try_recv();
    REQUIRE(got.has_value());
    CHECK(**got == 7);
    CHECK_FALSE(rx2.try_recv().has_value());
    CHECK(rx2.recv_for(10s).error() == errc::closed);  // at once, not timed out
  });
}

TEST_CASE("oneshot: dropping the sender without sending ends recv with errc::closed", "[oneshot]") {
  spindle::test::on_workers([] {
    {  // a parked receiver is woken
      auto [tx, rx] = spindle::oneshot<int>();
      std::atomic<bool> started{false};
      auto receiver = spindle::spawn([&] {
        started = true;
        return rx.recv();
      });
      REQUIRE(eventually([&] { return started.load(); }));
      (void)tf::sleep_for(kSettle);
      {
        OneshotSender<int> dropped = std::move(tx);
      }
      auto r = receiver.join();
      REQUIRE(r.has_value());
      REQUIRE_FALSE(r->has_value());
      CHECK(r->error() == errc::closed);
    }
    {  // a later receive fails at once
      auto [tx, rx] = spindle::oneshot<int>();
      {
        OneshotSender<int> dropped = std::move(tx);
      }
      CHECK(rx.recv().error() == errc::closed);
      CHECK_FALSE(rx.try_recv().has_value());
    }
    {  // assigning over a sender drops what it held
      auto [tx, rx] = spindle::oneshot<int>();
      auto [other_tx, other_rx] = spindle::oneshot<int>();
      tx = std::move(other_tx);
      CHECK(rx.recv().error() == errc::closed);
      CHECK_FALSE(tx.send(5).has_value());
      CHECK(other_rx.recv().value() == 5);
    }
  });
}

TEST_CASE("oneshot: dropping the receiver makes send hand the value back", "[oneshot]") {
  spindle::test::on_workers([] {
    auto [tx, rx] = spindle::oneshot<std::unique_ptr<int>>();
    {
      OneshotReceiver<std::unique_ptr<int>> dropped = std::move(rx);
    }
    auto back = tx.send(std::make_unique<int>(3));
    REQUIRE(back.has_value());
    REQUIRE(*back);
    CHECK(**back == 3);
  });
}

TEST_CASE("oneshot: recv_for times out with errc::timed_out and takes nothing", "[oneshot]") {
  spindle::test::on_workers([] {
    auto [tx, rx] = spindle::oneshot<int>();
    const auto deadline = Clock::now() + 20ms;
    auto r = rx.recv_until(deadline);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == errc::timed_out);
    CHECK(Clock::now() >= deadline);
    CHECK(rx.recv_for(5ms).error() == errc::timed_out);
    // The timed-out receives left no waiter: the value stays for the next one.
    CHECK_FALSE(tx.send(9).has_value());
    CHECK(rx.try_recv() == std::optional<int>(9));

    // A value sent before the deadline ends the wait.
    auto [tx2, rx2] = spindle::oneshot<int>();
    auto sender = spindle::spawn([end = std::move(tx2)]() mutable {
      (void)tf::sleep_for(2ms);
      return !end.send(10).has_value();
    });
    CHECK(rx2.recv_for(10s).value() == 10);
    CHECK(sender.join().value());
  });
}

TEST_CASE("oneshot: abort ends a parked recv with errc::aborted and leaves the value to come",
          "[oneshot][abort]") {
  spindle::test::on_workers([] {
    auto [tx, rx] = spindle::oneshot<int>();
    CHECK(abort_parked([&] { return rx.recv(); }) == errc::aborted);
    // The receiver is still there and no waiter is left: the value is kept.
    CHECK_FALSE(tx.send(1).has_value());
    CHECK(rx.try_recv() == std::optional<int>(1));

    // Checked on entry: an aborted fiber's receive fails even with the value there.
    auto [tx2, rx2] = spindle::oneshot<int>();
    CHECK_FALSE(tx2.send(2).has_value());
    CHECK(abort_before([&] { return rx2.recv_for(10s); }) == errc::aborted);
    CHECK(rx2.try_recv() == std::optional<int>(2));
  });
}

TEST_CASE(
    "oneshot: many pairs between fibers on several workers and plain threads deliver "
    "every value once",
    "[oneshot][thread]") {
  spindle::test::on_workers(
      [] {
        std::vector<OneshotSender<int>> senders;
        std::vector<OneshotReceiver<int>> receivers;
        for (int i = 0; i < kPairs; ++i) {
          auto [tx, rx] = spindle::oneshot<int>();
          senders.push_back(std::move(tx));
          receivers.push_back(std::move(rx));
        }
        // Fibers receive the first half (sent by a thread), a thread the
        // second half (sent by fibers); each side runs while the other sends.
        const std::size_t half = receivers.size() / 2;
        std::atomic<long> fiber_sum{0};
        std::vector<spindle::JoinHandle<void>> fibers;
        for (std::size_t f = 0; f < 4; ++f) {
          fibers.push_back(spindle::spawn([&, f] {
            for (std::size_t i = f; i < half; i += 4) {
              if (auto r = receivers[i].recv()) fiber_sum += *r;
            }
          }));
        }
        std::atomic<long> thread_sum{0};
        std::thread receiver_thread([&] {
          for (std::size_t i = half; i < receivers.size(); ++i) {
            if (auto r = receivers[i].recv()) thread_sum += *r;
          }
        });
        std::thread sender_thread([&] {
          for (std::size_t i = 0; i < half; ++i) (void)senders[i].send(static_cast<int>(i));
        });
        for (std::size_t f = 0; f < 4; ++f) {
          fibers.push_back(spindle::spawn([&, f] {
            for (std::size_t i = half + f; i < senders.size(); i += 4)
              (void)senders[i].send(static_cast<int>(i));
          }));
        }
        for (auto& f : fibers) (void)f.join();
        sender_thread.join();
        receiver_thread.join();
        const long n = static_cast<long>(receivers.size());
        const long h = static_cast<long>(half);
        CHECK(fiber_sum.load() == h * (h - 1) / 2);
        CHECK(thread_sum.load() == n * (n - 1) / 2 - h * (h - 1) / 2);
      },
      {2, 4});
}

TEST_CASE("oneshot: works between plain threads with no runtime", "[oneshot][thread]") {
  auto [tx, rx] = spindle::oneshot<int>();
  std::thread sender([end = std::move(tx)]() mutable { (void)end.send(11); });
  CHECK(rx.recv().value() == 11);
  sender.join();
  auto [tx2, rx2] = spindle::oneshot<int>();
  CHECK(rx2.recv_for(5ms).error() == errc::timed_out);
}
