// watch<T>: get returns the latest value; changed waits for a newer one than
// the receiver saw last and skips versions in between; close and dropping the
// sender; the try_ and timed calls; abort; fibers and plain threads.
//
// Assertions run on the root fiber (or the main thread) only: children record
// what they saw and the root checks it after joining them.
#include <atomic>
#include <catch2/catch.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "abort_harness.hpp"
#include "runtime_harness.hpp"

using namespace std::chrono_literals;
using spindle::Channel;
using spindle::Clock;
using spindle::errc;
using spindle::JoinHandle;
using spindle::WatchReceiver;
using spindle::WatchSender;
namespace tf = spindle::this_fiber;
using spindle::test::abort_before;
using spindle::test::abort_parked;
using spindle::test::eventually;
using spindle::test::kSettle;

namespace {

#if defined(SPINDLE_TSAN)
constexpr int kPerSender = 2'000;
#else
constexpr int kPerSender = 10'000;
#endif
constexpr int kSenders = 3;  // 2 fibers and a thread
constexpr int kFinal = -1;   // sent last, after every sender is done

// What one receiver saw of values `sender * kPerSender + i`.
struct Seen {
  bool in_order = true;  // each sender's values only ever newer
  int last = 0;
  std::error_code end;
};

Seen watch_all(WatchReceiver<int>& rx) {
  Seen s;
  std::vector<int> newest(kSenders, -1);
  for (;;) {
    auto r = rx.changed();
    if (!r) {
      s.end = r.error();
      return s;
    }
    s.last = *r;
    if (*r == kFinal) continue;
    int& n = newest[static_cast<std::size_t>(*r / kPerSender)];
    if (*r <= n) s.in_order = false;
    n = *r;
  }
}

}  // namespace

TEST_CASE("watch: get returns the latest value and changed skips to the newest version",
          "[watch]") {
  spindle::test::on_workers([] {
    auto [tx, rx] = spindle::watch<std::string>("a");
    CHECK(rx.get() == "a");
    CHECK_FALSE(rx.try_changed().has_value());  // it has seen "a"
    REQUIRE(tx.send("b").has_value());
    REQUIRE(tx.send("c").has_value());
    auto late = tx.subscribe();  // has seen "c"
    CHECK_FALSE(late.try_changed().has_value());
    CHECK(rx.changed().value() == "c");  // "b" was overtaken
    CHECK_FALSE(rx.try_changed().has_value());
    REQUIRE(tx.send("d").has_value());
    auto copy = rx;  // has seen what rx saw, goes on independently
    CHECK(rx.try_changed() == std::optional<std::string>("d"));
    CHECK(copy.changed_for(10s).value() == "d");
    REQUIRE(tx.send("e").has_value());
    CHECK(rx.get() == "e");  // now seen
    CHECK_FALSE(rx.try_changed().has_value());
    CHECK(late.changed().value() == "e");
  });
}

TEST_CASE("watch: changed returns after each new version a receiver waits for", "[watch]") {
  spindle::test::on_workers([] {
    constexpr int kRounds = 200;
    auto [tx, rx] = spindle::watch<int>(0);
    Channel<int> acks(0);
    auto receiver = spindle::spawn([&] {
      std::vector<int> got;
      for (int i = 1; i <= kRounds; ++i) {
        auto r = rx.changed();
        if (!r) break;
        got.push_back(*r);
        (void)acks.send(*r);
      }
      return got;
    });
    for (int i = 1; i <= kRounds; ++i) {
      REQUIRE(tx.send(i).has_value());
      REQUIRE(acks.recv().value() == i);
    }
    std::vector<int> expected;
    for (int i = 1; i <= kRounds; ++i) expected.push_back(i);
    CHECK(receiver.join().value() == expected);
  });
}

TEST_CASE("watch: receivers on fibers and threads see versions only newer and end on the last",
          "[watch][thread]") {
  spindle::test::on_workers(
      [] {
        auto [tx, rx] = spindle::watch<int>(0);
        std::vector<WatchReceiver<int>> rxs{rx, tx.subscribe(), tx.subscribe(), tx.subscribe()};
        std::vector<JoinHandle<Seen>> fibers;
        for (std::size_t i = 0; i + 1 < rxs.size(); ++i)
          fibers.push_back(spindle::spawn([&, i] { return watch_all(rxs[i]); }));
        Seen thread_seen;
        std::thread receiver_thread([&] { thread_seen = watch_all(rxs.back()); });
        auto send_share = [&](int p) {
          for (int i = 0; i < kPerSender; ++i) (void)tx.send(p * kPerSender + i);
        };
        std::thread sender_thread([&] { send_share(kSenders - 1); });
        std::vector<JoinHandle<void>> senders;
        for (int p = 0; p + 1 < kSenders; ++p)
          senders.push_back(spindle::spawn([&, p] { send_share(p); }));
        for (auto& s : senders) (void)s.join();
        sender_thread.join();
        REQUIRE(tx.send(kFinal).has_value());
        {
          WatchSender<int> dropped = std::move(tx);
        }
        std::vector<Seen> seen;
        for (auto& f : fibers) seen.push_back(f.join().value());
        receiver_thread.join();
        seen.push_back(thread_seen);
        for (const Seen& s : seen) {
          CHECK(s.in_order);
          CHECK(s.last == kFinal);  // the latest is never lost
          CHECK(s.end == errc::closed);
        }
        CHECK(rx.get() == kFinal);
      },
      {2, 4});
}

TEST_CASE("watch: close and a dropped sender end changed with errc::closed after the last value",
          "[watch]") {
  spindle::test::on_workers([] {
    auto [tx, rx] = spindle::watch<int>(0);
    REQUIRE(tx.send(1).has_value());
    tx.close();
    tx.close();  // idempotent
    CHECK(tx.send(2).error() == errc::closed);
    CHECK(rx.changed().value() == 1);                    // not seen yet, so still delivered
    CHECK(rx.changed_for(10s).error() == errc::closed);  // at once, not timed out
    CHECK_FALSE(rx.try_changed().has_value());
    CHECK(rx.get() == 1);

    auto [tx2, rx2] = spindle::watch<int>(5);
    std::atomic<int> started{0};
    std::vector<JoinHandle<std::error_code>> receivers;
    for (int i = 0; i < 3; ++i) {
      receivers.push_back(spindle::spawn([&, r = tx2.subscribe()]() mutable {
        started++;
        return r.changed().error();
      }));
    }
    std::error_code thread_end;
    std::thread receiver_thread([&] { thread_end = rx2.changed().error(); });
    REQUIRE(eventually([&] { return started.load() == 3; }));
    (void)tf::sleep_for(kSettle);
    for (auto& r : receivers) CHECK_FALSE(r.is_finished());
    {
      WatchSender<int> dropped = std::move(tx2);
    }
    for (auto& h : receivers) CHECK(h.join().value() == errc::closed);
    receiver_thread.join();
    CHECK(thread_end == errc::closed);
    CHECK(rx2.get() == 5);
  });
}

TEST_CASE("watch: changed_for times out with errc::timed_out and a new value ends the wait",
          "[watch]") {
  spindle::test::on_workers([] {
    auto [tx, rx] = spindle::watch<int>(0);
    const auto deadline = Clock::now() + 20ms;
    CHECK(rx.changed_until(deadline).error() == errc::timed_out);
    CHECK(Clock::now() >= deadline);
    auto sender = spindle::spawn([&] {
      (void)tf::sleep_for(2ms);
      return tx.send(7).has_value();
    });
    CHECK(rx.changed_for(10s).value() == 7);
    CHECK(sender.join().value());
  });
}

TEST_CASE("watch: abort ends a parked changed with errc::aborted and marks nothing seen",
          "[watch][abort]") {
  spindle::test::on_workers([] {
    auto [tx, rx] = spindle::watch<int>(0);
    CHECK(abort_parked([&] { return rx.changed(); }) == errc::aborted);
    // No waiter was left behind, and the new version is still unseen.
    REQUIRE(tx.send(1).has_value());
    CHECK(rx.try_changed() == std::optional<int>(1));

    // Checked on entry: an aborted fiber's changed fails even with a new version there.
    REQUIRE(tx.send(2).has_value());
    CHECK(abort_before([&] { return rx.changed_for(10s); }) == errc::aborted);
    CHECK(rx.try_changed() == std::optional<int>(2));
  });
}

TEST_CASE("watch: works between plain threads with no runtime", "[watch][thread]") {
  auto [tx, rx] = spindle::watch<int>(0);
  std::thread sender([&tx] {
    for (int i = 1; i <= 1000; ++i) (void)tx.send(i);
    tx.close();
  });
  int last = 0;
  while (auto r = rx.changed()) last = *r;
  sender.join();
  CHECK(last == 1000);
  auto [tx2, rx2] = spindle::watch<int>(0);
  CHECK(rx2.changed_for(5ms).error() == errc::timed_out);
}
