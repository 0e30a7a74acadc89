// Channel<T> with kUnbounded capacity: sends never block, receives wait while
// empty, close as for every Channel; fibers and plain threads; abort.
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
using spindle::Channel;
using spindle::errc;
using spindle::JoinHandle;
using spindle::kUnbounded;
namespace tf = spindle::this_fiber;
using spindle::test::abort_before;
using spindle::test::abort_parked;
using spindle::test::kSettle;

namespace {

#if defined(SPINDLE_TSAN)
constexpr int kManyValues = 20'000;
#else
constexpr int kManyValues = 100'000;
#endif

}  // namespace

TEST_CASE("unbounded channel: sends never block and values come out in order",
          "[channel][unbounded]") {
  spindle::test::on_workers([] {
    Channel<int> ch(kUnbounded);
    CHECK(ch.capacity() == kUnbounded);
    // Nobody receives: a bounded channel would have blocked long before.
    for (int i = 0; i < kManyValues; ++i) REQUIRE(ch.send(i).has_value());
    CHECK_FALSE(ch.try_send(kManyValues).has_value());
    CHECK(ch.send_for(kManyValues + 1, 0ns).has_value());  // never waits, so never times out
    CHECK(ch.size() == static_cast<std::size_t>(kManyValues) + 2);
    ch.close();
    CHECK(ch.try_send(-1) == std::optional<int>(-1));
    CHECK(ch.send(-1).error() == errc::closed);
    bool in_order = true;
    for (int i = 0; i < kManyValues + 2; ++i) {
      auto r = ch.recv();
      if (!r || *r != i) in_order = false;
    }
    CHECK(in_order);
    CHECK(ch.recv().error() == errc::closed);
  });
}

TEST_CASE("unbounded channel: recv waits while empty and times out with errc::timed_out",
          "[channel][unbounded]") {
  spindle::test::on_workers([] {
    Channel<int> ch(kUnbounded);
    CHECK(ch.recv_for(5ms).error() == errc::timed_out);
    CHECK_FALSE(ch.try_recv().has_value());
    auto receiver = spindle::spawn([&] { return ch.recv(); });
    (void)tf::sleep_for(kSettle);
    CHECK_FALSE(receiver.is_finished());
    REQUIRE(ch.send(3).has_value());
    auto r = receiver.join();
    REQUIRE(r.has_value());
    CHECK(r->value() == 3);
    CHECK(ch.size() == 0);  // handed to the receiver, not buffered
  });
}

TEST_CASE("unbounded channel: fibers and plain threads exchange every value exactly once",
          "[channel][unbounded][thread]") {
  spindle::test::on_workers(
      [] {
        Channel<std::uint32_t> ch(kUnbounded);
        constexpr std::uint32_t kSenders = 4;  // 3 fibers and a thread
        const auto n = static_cast<std::uint32_t>(kManyValues);
        auto send_share = [&](std::uint32_t p) {
          for (std::uint32_t v = p; v < n; v += kSenders) (void)ch.send(v);
        };
        std::vector<JoinHandle<std::pair<std::uint64_t, std::uint64_t>>> consumers;
        for (int c = 0; c < 3; ++c) {
          consumers.push_back(spindle::spawn([&] {
            std::uint64_t sum = 0;
            std::uint64_t count = 0;
            while (auto r = ch.recv()) {
              sum += *r;
              ++count;
            }
            return std::pair{sum, count};
          }));
        }
        std::atomic<std::uint64_t> thread_sum{0};
        std::atomic<std::uint64_t> thread_count{0};
        std::thread consumer_thread([&] {
          while (auto r = ch.recv()) {
            thread_sum += *r;
            thread_count++;
          }
        });
        std::thread producer_thread([&] { send_share(kSenders - 1); });
        std::vector<JoinHandle<void>> producers;
        for (std::uint32_t p = 0; p + 1 < kSenders; ++p)
          producers.push_back(spindle::spawn([&, p] { send_share(p); }));
        for (auto& p : producers) (void)p.join();
        producer_thread.join();
        ch.close();
        std::uint64_t sum = 0;
        std::uint64_t count = 0;
        for (auto& c : consumers) {
          auto r = c.join();
          REQUIRE(r.has_value());
          sum += r->first;
          count += r->second;
        }
        consumer_thread.join();
        sum += thread_sum.load();
        count += thread_count.load();
        CHECK(count == n);
        CHECK(sum == std::uint64_t{n} * (n - 1) / 2);
      },
      {2, 4});
}

TEST_CASE("unbounded channel: abort ends a parked recv with errc::aborted and takes nothing",
          "[channel][unbounded][abort]") {
  spindle::test::on_workers([] {
    Channel<int> ch(kUnbounded);
    CHECK(abort_parked([&] { return ch.recv(); }) == errc::aborted);
    // No waiter was left behind: the next value is buffered, not handed to it.
    REQUIRE(ch.send(1).has_value());
    CHECK(ch.size() == 1);
    // Checked on entry: an aborted fiber's calls fail even where they would not block.
    CHECK(abort_before([&] { return ch.recv(); }) == errc::aborted);
    CHECK(abort_before([&] { return ch.send(2); }) == errc::aborted);
    CHECK(ch.size() == 1);
    CHECK(ch.try_recv() == std::optional<int>(1));
  });
}
