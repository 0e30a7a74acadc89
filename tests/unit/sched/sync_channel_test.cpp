// Channel<T>: FIFO, bounded and unbuffered blocking, close, the try_ and timed
// calls, many producers and consumers, plain threads, move-only values. Abort
// is in sync_channel_abort_test.cpp.
//
// Assertions run on the root fiber (or the main thread) only: children record
// what they saw and the root checks it after joining them.

#include <algorithm>
#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <numeric>
#include <optional>
#include <thread>
#include <vector>

#include "runtime_harness.hpp"

using namespace std::chrono_literals;
using spindle::Channel;
using spindle::Clock;
using spindle::errc;
using spindle::JoinHandle;
using spindle::Result;
namespace tf = spindle::this_fiber;
using spindle::test::eventually;
using spindle::test::kSettle;

namespace {

#if defined(SPINDLE_TSAN)
constexpr std::uint32_t kManyValues = 20'000;
constexpr int kStreamValues = 2'000;
#else
constexpr std::uint32_t kManyValues = 100'000;
constexpr int kStreamValues = 10'000;
#endif

constexpr std::array<std::size_t, 3> kCapacities{0, 1, 8};

template <class T>
std::vector<T> iota_vector(T n) {
  std::vector<T> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), T{0});
  return v;
}

}  // namespace

TEST_CASE("channel: values come out in the order they went in", "[channel]") {
  spindle::test::on_workers([] {
    for (std::size_t cap : kCapacities) {
      INFO("capacity = " << cap);
      Channel<int> ch(cap);
      CHECK(ch.capacity() == cap);
      auto producer = spindle::spawn([&] {
        for (int i = 0; i < kStreamValues; ++i) {
          if (!ch.send(i)) return false;
        }
        ch.close();
        return true;
      });
      std::vector<int> got;
      std::error_code end;
      for (;;) {
        auto r = ch.recv();
        if (!r) {
          end = r.error();
          break;
        }
        got.push_back(*r);
      }
      CHECK(producer.join().value());
      CHECK(end == errc::closed);
      CHECK(got == iota_vector(kStreamValues));
    }
  });
}

TEST_CASE("channel: waiting receivers and senders are served in arrival order", "[channel][fifo]") {
  // One worker: once a fiber has bumped `arrived` it ran on to its park before
  // the root could run again, so the queue order is known.
  spindle::test::on_workers(
      [] {
        constexpr int kFibers = 5;
        std::atomic<int> arrived{0};
        {
          Channel<int> ch(0);
          std::vector<JoinHandle<Result<int>>> receivers;
          for (int i = 0; i < kFibers; ++i) {
            receivers.push_back(spindle::spawn([&] {
              arrived++;
              return ch.recv();
            }));
            REQUIRE(eventually([&] { return arrived.load() == i + 1; }));
          }
          for (int i = 0; i < kFibers; ++i) REQUIRE(ch.send(i * 10).has_value());
          for (int i = 0; i < kFibers; ++i) {
            auto r = receivers[static_cast<std::size_t>(i)].join();
            REQUIRE(r.has_value());
            REQUIRE(r->has_value());
            CHECK(**r == i * 10);
          }
        }
        for (std::size_t cap : {std::size_t{0}, std::size_t{1}}) {
          INFO("capacity = " << cap);
          Channel<int> ch(cap);
          if (cap == 1) REQUIRE(ch.send(-1).has_value());  // full
          arrived = 0;
          std::vector<JoinHandle<bool>> senders;
          for (int i = 0; i < kFibers; ++i) {
            senders.push_back(spindle::spawn([&, i] {
              arrived++;
              return ch.send(i).has_value();
            }));
            REQUIRE(eventually([&] { return arrived.load() == i + 1; }));
          }
          std::vector<int> got;
          for (int i = 0; i < kFibers + static_cast<int>(cap); ++i)
            got.push_back(ch.recv().value());
          for (auto& s : senders) CHECK(s.join().value());
          std::vector<int> expected;
          if (cap == 1) expected.push_back(-1);
          for (int i = 0; i < kFibers; ++i) expected.push_back(i);
          CHECK(got == expected);
        }
      },
      {1});
}

TEST_CASE("channel: a full bounded channel blocks the sender until a recv", "[channel]") {
  spindle::test::on_workers([] {
    Channel<int> ch(2);
    REQUIRE(ch.send(1).has_value());
    REQUIRE(ch.send(2).has_value());
    CHECK(ch.size() == 2);
    std::atomic<bool> sent{false};
    auto h = spindle::spawn([&] {
      auto r = ch.send(3);
      sent = true;
      return r.has_value();
    });
    (void)tf::sleep_for(kSettle);
    CHECK_FALSE(sent.load());
    CHECK_FALSE(h.is_finished());
    CHECK(ch.size() == 2);
    CHECK(ch.recv().value() == 1);
    CHECK(h.join().value());
    CHECK(sent.load());
    CHECK(ch.size() == 2);
    CHECK(ch.recv().value() == 2);
    CHECK(ch.recv().value() == 3);
    CHECK(ch.size() == 0);
  });
}

TEST_CASE("channel: an unbuffered send completes only when a receiver takes the value",
          "[channel]") {
  spindle::test::on_workers([] {
    Channel<int> ch(0);
    CHECK(ch.try_send(7) == std::optional<int>(7));  // nobody receiving: handed back
    CHECK_FALSE(ch.try_recv().has_value());
    std::atomic<bool> sent{false};
    auto h = spindle::spawn([&] {
      auto r = ch.send(42);
      sent = true;
      return r.has_value();
    });
    (void)tf::sleep_for(kSettle);
    CHECK_FALSE(sent.load());
    CHECK_FALSE(h.is_finished());
    CHECK(ch.size() == 0);  // nothing is ever buffered
    CHECK(ch.recv().value() == 42);
    CHECK(h.join().value());
    CHECK(sent.load());

    // The other way round: a parked receiver lets a try_send through, and
    // that try_send reports success (a failed one must deliver nothing).
    auto receiver = spindle::spawn([&] { return ch.recv(); });
    std::optional<int> back;
    REQUIRE(eventually([&] {
      back = ch.try_send(5);
      return !back.has_value() || receiver.is_finished();
    }));
    CHECK_FALSE(back.has_value());
    auto r = receiver.join();
    REQUIRE(r.has_value());
    REQUIRE(r->has_value());
    CHECK(**r == 5);
    CHECK(ch.size() == 0);
  });
}

TEST_CASE("channel: close wakes blocked receivers and blocked senders with errc::closed",
          "[channel]") {
  spindle::test::on_workers([] {
    constexpr int kFibers = 4;
    {
      Channel<int> ch(4);
      std::atomic<int> started{0};
      std::vector<JoinHandle<Result<int>>> receivers;
      for (int i = 0; i < kFibers; ++i) {
        receivers.push_back(spindle::spawn([&] {
          started++;
          return ch.recv();
        }));
      }
      REQUIRE(eventually([&] { return started.load() == kFibers; }));
      (void)tf::sleep_for(kSettle);
      for (auto& r : receivers) CHECK_FALSE(r.is_finished());
      ch.close();
      CHECK(ch.closed());
      for (auto& h : receivers) {
        auto r = h.join();
        REQUIRE(r.has_value());
        REQUIRE_FALSE(r->has_value());
        CHECK(r->error() == errc::closed);
      }
    }
    for (std::size_t cap : {std::size_t{0}, std::size_t{1}}) {
      INFO("capacity = " << cap);
      Channel<int> ch(cap);
      if (cap == 1) REQUIRE(ch.send(100).has_value());  // full
      std::atomic<int> started{0};
      std::vector<JoinHandle<Result<void>>> senders;
      for (int i = 0; i < kFibers; ++i) {
        senders.push_back(spindle::spawn([&, i] {
          started++;
          return ch.send(i);
        }));
      }
      REQUIRE(eventually([&] { return started.load() == kFibers; }));
      (void)tf::sleep_for(kSettle);
      for (auto& s : senders) CHECK_FALSE(s.is_finished());
      ch.close();
      for (auto& h : senders) {
        auto r = h.join();
        REQUIRE(r.has_value());
        REQUIRE_FALSE(r->has_value());
        CHECK(r->error() == errc::closed);
      }
      // The buffered value survives the close; the blocked senders' do not.
      if (cap == 1) CHECK(ch.recv().value() == 100);
      auto end = ch.recv();
      REQUIRE_FALSE(end.has_value());
      CHECK(end.error() == errc::closed);
    }
  });
}

TEST_CASE("channel: after close recv drains the buffer and then reports closed", "[channel]") {
  spindle::test::on_workers([] {
    Channel<int> ch(5);
    for (int i = 1; i <= 3; ++i) REQUIRE(ch.send(i).has_value());
    CHECK_FALSE(ch.closed());
    ch.close();
    ch.close();  // idempotent
    CHECK(ch.closed());
    auto s = ch.send(4);
    REQUIRE_FALSE(s.has_value());
    CHECK(s.error() == errc::closed);
    CHECK(ch.try_send(5) == std::optional<int>(5));
    auto timed = ch.send_for(6, 10s);
    REQUIRE_FALSE(timed.has_value());
    CHECK(timed.error() == errc::closed);
    CHECK(ch.size() == 3);
    CHECK(ch.recv().value() == 1);
    CHECK(ch.try_recv() == std::optional<int>(2));
    CHECK(ch.recv_for(10s).value() == 3);
    for (int i = 0; i < 2; ++i) {
      auto r = ch.recv();
      REQUIRE_FALSE(r.has_value());
      CHECK(r.error() == errc::closed);
    }
    auto rt = ch.recv_for(10s);  // closed, not timed out, and at once
    REQUIRE_FALSE(rt.has_value());
    CHECK(rt.error() == errc::closed);
    CHECK_FALSE(ch.try_recv().has_value());
  });
}

TEST_CASE("channel: try_send and try_recv never block", "[channel]") {
  spindle::test::on_workers([] {
    Channel<int> ch(2);
    CHECK_FALSE(ch.try_recv().has_value());
    CHECK_FALSE(ch.try_send(1).has_value());
    CHECK_FALSE(ch.try_send(2).has_value());
    CHECK(ch.try_send(3) == std::optional<int>(3));  // full
    CHECK(ch.size() == 2);
    CHECK(ch.try_recv() == std::optional<int>(1));
    CHECK(ch.try_recv() == std::optional<int>(2));
    CHECK_FALSE(ch.try_recv().has_value());

    // Unbuffered: try_recv takes a blocked sender's value.
    Channel<int> u(0);
    auto h = spindle::spawn([&] { return u.send(9).has_value(); });
    std::optional<int> got;
    REQUIRE(eventually([&] {
      got = u.try_recv();
      return got.has_value();
    }));
    CHECK(got == std::optional<int>(9));
    CHECK(h.join().value());

    // Bounded and empty, with a receiver parked: try_send hands the value
    // straight to it and reports success; nothing is left in the buffer.
    Channel<int> e(2);
    std::atomic<bool> started{false};
    auto waiting = spindle::spawn([&] {
      started = true;
      return e.recv();
    });
    REQUIRE(eventually([&] { return started.load(); }));
    (void)tf::sleep_for(kSettle);  // let it park (if not, the value is just buffered)
    const std::optional<int> back = e.try_send(11);
    auto wr = waiting.join();
    REQUIRE(wr.has_value());
    REQUIRE(wr->has_value());
    CHECK(**wr == 11);
    CHECK_FALSE(back.has_value());  // it was delivered, so it must report success
    CHECK(e.size() == 0);
    CHECK_FALSE(e.try_recv().has_value());

    // Full bounded channel: try_recv makes room and a waiting sender fills it.
    Channel<int> b(1);
    REQUIRE(b.send(1).has_value());
    auto h2 = spindle::spawn([&] { return b.send(2).has_value(); });
    (void)tf::sleep_for(kSettle);
    CHECK(b.try_recv() == std::optional<int>(1));
    CHECK(h2.join().value());
    CHECK(b.size() == 1);
    CHECK(b.try_recv() == std::optional<int>(2));
  });
}

TEST_CASE("channel: recv_for and send_for time out with errc::timed_out", "[channel]") {
  spindle::test::on_workers([] {
    Channel<int> ch(1);
    const auto deadline = Clock::now() + 20ms;
    auto r = ch.recv_until(deadline);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == errc::timed_out);
    CHECK(Clock::now() >= deadline);
    auto r2 = ch.recv_for(5ms);
    REQUIRE_FALSE(r2.has_value());
    CHECK(r2.error() == errc::timed_out);

    REQUIRE(ch.send(1).has_value());
    const auto send_deadline = Clock::now() + 20ms;
    auto s = ch.send_until(2, send_deadline);
    REQUIRE_FALSE(s.has_value());
    CHECK(s.error() == errc::timed_out);
    CHECK(Clock::now() >= send_deadline);
    CHECK(ch.size() == 1);  // 2 was not sent
    CHECK(ch.recv().value() == 1);
    CHECK_FALSE(ch.try_recv().has_value());

    // Unbuffered, nobody receiving.
    Channel<int> u(0);
    auto us = u.send_for(3, 5ms);
    REQUIRE_FALSE(us.has_value());
    CHECK(us.error() == errc::timed_out);
    CHECK_FALSE(u.try_recv().has_value());  // the timed-out sender left the queue
    auto ur = u.recv_for(5ms);
    REQUIRE_FALSE(ur.has_value());
    CHECK(ur.error() == errc::timed_out);
    CHECK(u.try_send(4) == std::optional<int>(4));  // the timed-out receiver left the queue

    // A value that arrives before the deadline ends the wait.
    auto h = spindle::spawn([&] {
      (void)tf::sleep_for(2ms);
      return ch.send(5).has_value();
    });
    CHECK(ch.recv_for(10s).value() == 5);
    CHECK(h.join().value());
    auto h2 = spindle::spawn([&] {
      (void)tf::sleep_for(2ms);
      return u.recv();
    });
    CHECK(u.send_for(6, 10s).has_value());
    auto got = h2.join();
    REQUIRE(got.has_value());
    CHECK(got->value() == 6);
  });
}

TEST_CASE("channel: many producers and consumers exchange every value exactly once", "[channel]") {
  spindle::test::on_workers([] {
    constexpr std::uint32_t kProducers = 4;
    constexpr std::uint32_t kConsumers = 4;
    for (std::size_t cap : {std::size_t{0}, std::size_t{64}}) {
      INFO("capacity = " << cap);
      Channel<std::uint32_t> ch(cap);
      std::vector<JoinHandle<bool>> producers;
      for (std::uint32_t p = 0; p < kProducers; ++p) {
        producers.push_back(spindle::spawn([&, p] {
          for (std::uint32_t v = p; v < kManyValues; v += kProducers) {
            if (!ch.send(v)) return false;
          }
          return true;
        }));
      }
      std::vector<JoinHandle<std::vector<std::uint32_t>>> consumers;
      for (std::uint32_t c = 0; c < kConsumers; ++c) {
        consumers.push_back(spindle::spawn([&] {
          std::vector<std::uint32_t> got;
          while (auto r = ch.recv()) got.push_back(*r);
          return got;
        }));
      }
      for (auto& p : producers) CHECK(p.join().value());
      ch.close();
      std::vector<std::uint32_t> all;
      std::uint64_t sum = 0;
      bool per_producer_fifo = true;
      for (auto& c : consumers) {
        auto got = c.join();
        REQUIRE(got.has_value());
        // Each producer's values reach any one consumer in the order sent.
        std::array<std::int64_t, kProducers> last;
        last.fill(-1);
        for (std::uint32_t v : *got) {
          sum += v;
          auto& l = last[v % kProducers];
          if (static_cast<std::int64_t>(v) <= l) per_producer_fifo = false;
          l = v;
        }
        all.insert(all.end(), got->begin(), got->end());
      }
      CHECK(all.size() == kManyValues);
      CHECK(sum == std::uint64_t{kManyValues} * (kManyValues - 1) / 2);
      CHECK(per_producer_fifo);
      std::sort(all.begin(), all.end());
      CHECK(all == iota_vector(kManyValues));
    }
  });
}

TEST_CASE("channel: a plain thread feeds fibers and fibers feed plain threads",
          "[channel][thread]") {
  spindle::test::on_workers([] {
    constexpr int kN = kStreamValues;
    constexpr long kExpectedSum = long{kN} * (kN - 1) / 2;
    for (std::size_t cap : {std::size_t{0}, std::size_t{16}}) {
      INFO("capacity = " << cap);
      {  // thread -> fibers
        Channel<int> ch(cap);
        std::atomic<bool> thread_ok{true};
        std::thread producer([&] {
          for (int i = 0; i < kN; ++i) {
            if (!ch.send(i)) thread_ok = false;
          }
          ch.close();
        });
        std::vector<JoinHandle<std::pair<long, long>>> consumers;
        for (int c = 0; c < 3; ++c) {
          consumers.push_back(spindle::spawn([&] {
            long sum = 0;
            long count = 0;
            while (auto r = ch.recv()) {
              sum += *r;
              ++count;
            }
            return std::pair{sum, count};
          }));
        }
        long sum = 0;
        long count = 0;
        for (auto& c : consumers) {
          auto r = c.join();
          REQUIRE(r.has_value());
          sum += r->first;
          count += r->second;
        }
        producer.join();  // it closed the channel, so it is finishing
        CHECK(thread_ok.load());
        CHECK(count == kN);
        CHECK(sum == kExpectedSum);
      }
      {  // fibers -> threads
        Channel<int> ch(cap);
        std::atomic<long> sum{0};
        std::atomic<long> count{0};
        spindle::WaitGroup consumers_done(2);
        std::vector<std::thread> consumers;
        for (int c = 0; c < 2; ++c) {
          consumers.emplace_back([&] {
            while (auto r = ch.recv()) {
              sum += *r;
              count++;
            }
            consumers_done.done();
          });
        }
        std::vector<JoinHandle<bool>> producers;
        for (int p = 0; p < 3; ++p) {
          producers.push_back(spindle::spawn([&, p] {
            for (int i = p; i < kN; i += 3) {
              if (!ch.send(i)) return false;
            }
            return true;
          }));
        }
        for (auto& p : producers) CHECK(p.join().value());
        ch.close();  // releases the threads whatever happened above
        CHECK(consumers_done.wait().has_value());
        for (auto& t : consumers) t.join();
        CHECK(count.load() == kN);
        CHECK(sum.load() == kExpectedSum);
      }
    }
  });
}

TEST_CASE("channel: works between plain threads with no runtime", "[channel][thread]") {
  for (std::size_t cap : {std::size_t{0}, std::size_t{4}}) {
    INFO("capacity = " << cap);
    Channel<int> ch(cap);
    std::vector<int> got;
    std::thread consumer([&] {
      while (auto r = ch.recv()) got.push_back(*r);
    });
    for (int i = 0; i < 1000; ++i) REQUIRE(ch.send(i).has_value());
    auto timed = Channel<int>(0).recv_for(5ms);
    CHECK(timed.error() == errc::timed_out);
    ch.close();
    consumer.join();
    CHECK(got == iota_vector(1000));
  }
}

TEST_CASE("channel: carries move-only values", "[channel]") {
  spindle::test::on_workers([] {
    for (std::size_t cap : {std::size_t{0}, std::size_t{2}}) {
      INFO("capacity = " << cap);
      Channel<std::unique_ptr<int>> ch(cap);
      auto producer = spindle::spawn([&] {
        for (int i = 0; i < 100; ++i) {
          if (!ch.send(std::make_unique<int>(i))) return false;
        }
        return true;
      });
      bool in_order = true;
      for (int i = 0; i < 100; ++i) {
        auto r = ch.recv();
        if (!r || !*r || **r != i) in_order = false;
      }
      CHECK(in_order);
      CHECK(producer.join().value());
    }
    // try_send hands the value back when it cannot send.
    Channel<std::unique_ptr<int>> full(1);
    REQUIRE(full.send(std::make_unique<int>(1)).has_value());
    auto back = full.try_send(std::make_unique<int>(2));
    REQUIRE(back.has_value());
    REQUIRE(*back);
    CHECK(**back == 2);
    // A blocked sender's value is dropped by close (LeakSanitizer checks it is
    // freed); the buffered one is still delivered.
    auto blocked = spindle::spawn([&] { return full.send(std::make_unique<int>(3)); });
    (void)tf::sleep_for(kSettle);
    full.close();
    auto br = blocked.join();
    REQUIRE(br.has_value());
    CHECK(br->error() == errc::closed);
    auto first = full.recv();
    REQUIRE(first.has_value());
    CHECK(**first == 1);
    CHECK(full.recv().error() == errc::closed);
    // A channel destroyed with values buffered frees them.
    Channel<std::unique_ptr<int>> dropped(4);
    REQUIRE(dropped.send(std::make_unique<int>(4)).has_value());
    REQUIRE(dropped.send(std::make_unique<int>(5)).has_value());
  });
}
