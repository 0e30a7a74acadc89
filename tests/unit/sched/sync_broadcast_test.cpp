// broadcast<T>: every receiver sees every value sent after it subscribed; a
// receiver that fell behind is told how many values it missed; close and
// dropping the sender; the try_ and timed calls; abort; fibers and plain threads.
//
// Assertions run on the root fiber (or the main thread) only: children record
// what they saw and the root checks it after joining them.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <optional>
#include <thread>
#include <vector>

#include "abort_harness.hpp"
#include "runtime_harness.hpp"

using namespace std::chrono_literals;
using spindle::BroadcastReceiver;
using spindle::BroadcastSender;
using spindle::Clock;
using spindle::errc;
using spindle::JoinHandle;
using spindle::Result;
namespace tf = spindle::this_fiber;
using spindle::test::abort_before;
using spindle::test::abort_parked;
using spindle::test::eventually;
using spindle::test::kSettle;

namespace {

#if defined(SPINDLE_TSAN)
constexpr std::uint32_t kPerSender = 2'000;
#else
constexpr std::uint32_t kPerSender = 10'000;
#endif
constexpr std::uint32_t kSenders = 3;  // 2 fibers and a thread

// What one receiver saw of a stream of values `sender * kPerSender + i`.
struct Seen {
  std::uint64_t count = 0;
  std::uint64_t sum = 0;
  std::uint64_t missed = 0;
  bool in_order = true;  // each sender's values in the order sent
  std::error_code end;
};

Seen read_all(BroadcastReceiver<std::uint32_t>& rx) {
  Seen s;
  std::vector<std::int64_t> last(kSenders, -1);
  for (;;) {
    auto r = rx.recv();
    if (!r && r.error() == errc::lagged) {
      s.missed += rx.missed();
      continue;
    }
    if (!r) {
      s.end = r.error();
      return s;
    }
    ++s.count;
    s.sum += *r;
    auto& l = last[*r / kPerSender];
    if (static_cast<std::int64_t>(*r) <= l) s.in_order = false;
    l = *r;
  }
}

// try_recv's value; nullopt if it had none (nothing ready, or an error).
std::optional<int> tried_value(const std::optional<Result<int>>& t) {
  if (t && *t) return **t;
  return std::nullopt;
}

}  // namespace

TEST_CASE("broadcast: every receiver sees every value sent after it subscribed",
          "[broadcast][thread]") {
  // With a ring as large as the stream no receiver can lag: each must see all
  // of it. With a small ring a slow one may miss values, but what it saw and
  // what it was told it missed add up to the stream.
  spindle::test::on_workers(
      [] {
        constexpr std::uint64_t kTotal = std::uint64_t{kSenders} * kPerSender;
        for (std::size_t cap : {std::size_t{kTotal}, std::size_t{8}}) {
          INFO("capacity = " << cap);
          auto [tx, rx] = spindle::broadcast<std::uint32_t>(cap);
          std::vector<BroadcastReceiver<std::uint32_t>> rxs{rx, tx.subscribe(), tx.subscribe(),
                                                            tx.subscribe()};
          std::vector<JoinHandle<Seen>> fibers;
          for (std::size_t i = 0; i + 1 < rxs.size(); ++i)
            fibers.push_back(spindle::spawn([&, i] { return read_all(rxs[i]); }));
          Seen thread_seen;
          std::thread receiver_thread([&] { thread_seen = read_all(rxs.back()); });
          auto send_share = [&](std::uint32_t p) {
            for (std::uint32_t i = 0; i < kPerSender; ++i) (void)tx.send(p * kPerSender + i);
          };
          std::thread sender_thread([&] { send_share(kSenders - 1); });
          std::vector<JoinHandle<void>> senders;
          for (std::uint32_t p = 0; p + 1 < kSenders; ++p)
            senders.push_back(spindle::spawn([&, p] { send_share(p); }));
          for (auto& s : senders) (void)s.join();
          sender_thread.join();
          tx.close();
          std::vector<Seen> seen;
          for (auto& f : fibers) seen.push_back(f.join().value());
          receiver_thread.join();
          seen.push_back(thread_seen);
          for (const Seen& s : seen) {
            CHECK(s.end == errc::closed);
            CHECK(s.in_order);
            CHECK(s.count + s.missed == kTotal);
            if (cap == kTotal) {
              CHECK(s.missed == 0);
              CHECK(s.sum == kTotal * (kTotal - 1) / 2);
            }
          }
        }
      },
      {2, 4});
}

TEST_CASE(
    "broadcast: a receiver that fell behind is told exactly how many values it missed, "
    "then reads on from the oldest held",
    "[broadcast]") {
  spindle::test::on_workers([] {
    constexpr int kCap = 4;
    constexpr int kExtra = 3;
    auto [tx, rx] = spindle::broadcast<int>(kCap);
    for (int i = 0; i < kCap + kExtra; ++i) REQUIRE(tx.send(i).has_value());
    auto late = tx.subscribe();  // sees only what is sent from now on
    auto lagged = rx.recv();
    REQUIRE_FALSE(lagged.has_value());
    CHECK(lagged.error() == errc::lagged);
    CHECK(rx.missed() == kExtra);
    std::vector<int> got;
    for (int i = 0; i < kCap; ++i) got.push_back(rx.recv().value());
    CHECK(got == std::vector<int>{3, 4, 5, 6});
    CHECK_FALSE(rx.try_recv().has_value());
    CHECK_FALSE(late.try_recv().has_value());

    // Through try_recv, and twice in a row.
    auto copy = rx;  // reads on from the same place, independently
    for (int i = 0; i < 2 * kCap + 1; ++i) REQUIRE(tx.send(100 + i).has_value());
    auto t = rx.try_recv();
    REQUIRE(t.has_value());
    REQUIRE_FALSE(t->has_value());
    CHECK(t->error() == errc::lagged);
    CHECK(rx.missed() == kCap + 1);
    CHECK(tried_value(rx.try_recv()) == std::optional<int>(105));
    CHECK(copy.recv().error() == errc::lagged);
    CHECK(copy.missed() == kCap + 1);
    CHECK(copy.recv().value() == 105);
    CHECK(late.recv().error() == errc::lagged);
    CHECK(late.missed() == kCap + 1);
    CHECK(late.recv().value() == 105);
  });
}

TEST_CASE("broadcast: after close receivers read what is held and then get errc::closed",
          "[broadcast]") {
  spindle::test::on_workers([] {
    auto [tx, rx] = spindle::broadcast<int>(4);
    REQUIRE(tx.send(1).has_value());
    REQUIRE(tx.send(2).has_value());
    tx.close();
    tx.close();  // idempotent
    CHECK(tx.send(3).error() == errc::closed);
    CHECK(rx.recv().value() == 1);
    CHECK(rx.recv_for(10s).value() == 2);
    CHECK(rx.recv_for(10s).error() == errc::closed);  // at once, not timed out
    auto t = rx.try_recv();
    REQUIRE(t.has_value());
    CHECK(t->error() == errc::closed);

    // Dropping the sender wakes parked receivers, fibers and a thread.
    auto [tx2, rx2] = spindle::broadcast<int>(4);
    std::atomic<int> started{0};
    std::vector<JoinHandle<Result<int>>> receivers;
    for (int i = 0; i < 3; ++i) {
      receivers.push_back(spindle::spawn([&, r = tx2.subscribe()]() mutable {
        started++;
        return r.recv();
      }));
    }
    std::error_code thread_end;
    std::thread receiver_thread([&] { thread_end = rx2.recv().error(); });
    REQUIRE(eventually([&] { return started.load() == 3; }));
    (void)tf::sleep_for(kSettle);
    for (auto& r : receivers) CHECK_FALSE(r.is_finished());
    {
      BroadcastSender<int> dropped = std::move(tx2);
    }
    for (auto& h : receivers) {
      auto r = h.join();
      REQUIRE(r.has_value());
      CHECK(r->error() == errc::closed);
    }
    receiver_thread.join();
    CHECK(thread_end == errc::closed);
  });
}

TEST_CASE("broadcast: recv_for times out with errc::timed_out and a sent value ends the wait",
          "[broadcast]") {
  spindle::test::on_workers([] {
    auto [tx, rx] = spindle::broadcast<int>(2);
    const auto deadline = Clock::now() + 20ms;
    CHECK(rx.recv_until(deadline).error() == errc::timed_out);
    CHECK(Clock::now() >= deadline);
    CHECK_FALSE(rx.try_recv().has_value());
    auto sender = spindle::spawn([&] {
      (void)tf::sleep_for(2ms);
      return tx.send(7).has_value();
    });
    CHECK(rx.recv_for(10s).value() == 7);
    CHECK(sender.join().value());
  });
}

TEST_CASE("broadcast: abort ends a parked recv with errc::aborted and takes nothing",
          "[broadcast][abort]") {
  spindle::test::on_workers([] {
    auto [tx, rx] = spindle::broadcast<int>(2);
    CHECK(abort_parked([&] { return rx.recv(); }) == errc::aborted);
    // No waiter was left behind, and the receiver's place did not move.
    REQUIRE(tx.send(1).has_value());
    CHECK(tried_value(rx.try_recv()) == std::optional<int>(1));

    // Checked on entry: an aborted fiber's receive fails even with a value there.
    REQUIRE(tx.send(2).has_value());
    CHECK(abort_before([&] { return rx.recv_for(10s); }) == errc::aborted);
    CHECK(tried_value(rx.try_recv()) == std::optional<int>(2));
  });
}

TEST_CASE("broadcast: works between plain threads with no runtime", "[broadcast][thread]") {
  auto [tx, rx] = spindle::broadcast<int>(1000);
  std::vector<int> got;
  std::thread receiver([&] {
    while (auto r = rx.recv()) got.push_back(*r);
  });
  for (int i = 0; i < 1000; ++i) REQUIRE(tx.send(i).has_value());
  CHECK(tx.subscribe().recv_for(5ms).error() == errc::timed_out);
  tx.close();
  receiver.join();
  REQUIRE(got.size() == 1000);
  CHECK(got.front() == 0);
  CHECK(got.back() == 999);
}
