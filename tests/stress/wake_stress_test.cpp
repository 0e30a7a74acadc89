// Stress: cross-worker wakes under random timing must never be lost. Seeded:
// the seed is printed; SPINDLE_SEED=<n> replays it. Bounded: a lost wake-up
// shows as the deadline passing, not as a hang.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <thread>
#include <vector>

#include "runtime_harness.hpp"
#include "xorshift.hpp"

using namespace std::chrono_literals;
namespace tf = spindle::this_fiber;

namespace {

std::uint64_t test_seed() {
  if (const char* s = std::getenv("SPINDLE_SEED")) return std::strtoull(s, nullptr, 10);
  return std::random_device{}();
}

// Per-fiber random perturbation: now and then a short sleep or a yield, so
// wakers and sleepers meet in every order.
struct Jitter : spindle::test::Xorshift {
  using Xorshift::Xorshift;
  void operator()() {
    const std::uint64_t r = next();
    if (r % 64 == 0) {
      (void)tf::sleep_for(std::chrono::microseconds(1 + (r >> 8) % 50));
    } else if (r % 16 == 1) {
      (void)tf::yield();
    }
  }
};

#if defined(SPINDLE_TSAN)
constexpr auto kDeadline = 600s;
#else
constexpr auto kDeadline = 120s;
#endif

}  // namespace

TEST_CASE("stress: a million cross-worker channel wakes with random sleeps lose none", "[stress]") {
  const std::uint64_t seed = test_seed();
  std::printf("stress seed = %llu (replay with SPINDLE_SEED=%llu)\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
  constexpr std::size_t kPairs = 64;
  constexpr std::uint64_t kRounds = 7'813;  // 64 pairs x 7813 rounds x 2 messages > 1M wakes
  std::atomic<std::uint64_t> messages{0};
  const bool finished = spindle::test::run(
      [&] {
        spindle::WaitGroup done(2 * kPairs);
        std::vector<std::unique_ptr<spindle::Channel<std::uint64_t>>> chans;
        for (std::size_t p = 0; p < 2 * kPairs; ++p)
          chans.push_back(std::make_unique<spindle::Channel<std::uint64_t>>(0));
        for (std::size_t p = 0; p < kPairs; ++p) {
          auto& ping = *chans[2 * p];
          auto& pong = *chans[2 * p + 1];
          spindle::spawn([&, p] {
            Jitter jitter(seed + 2 * p);
            for (std::uint64_t r = 0; r < kRounds; ++r) {
              REQUIRE(ping.send(r));
              jitter();
              auto v = pong.recv();
              REQUIRE(v);
              REQUIRE(*v == r + 1);
              messages.fetch_add(2, std::memory_order_relaxed);
            }
            done.done();
          });
          spindle::spawn([&, p] {
            Jitter jitter(seed + 2 * p + 1);
            for (std::uint64_t r = 0; r < kRounds; ++r) {
              auto v = ping.recv();
              REQUIRE(v);
              jitter();
              REQUIRE(pong.send(*v + 1));
            }
            done.done();
          });
        }
        return done.wait_until(spindle::Clock::now() + kDeadline).value();
      },
      spindle::Config{.workers = 4});
  INFO("seed " << seed);
  REQUIRE(finished);
  CHECK(messages == 2 * kPairs * kRounds);
  CHECK(messages >= 1'000'000);
}

TEST_CASE("stress: fibers and plain threads wake each other through every primitive", "[stress]") {
  const std::uint64_t seed = test_seed();
  std::printf("stress seed = %llu (replay with SPINDLE_SEED=%llu)\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
#if defined(SPINDLE_TSAN)
  constexpr int kRounds = 2'000;
#else
  constexpr int kRounds = 20'000;
#endif
  spindle::Mutex mutex;
  spindle::CondVar cv;
  spindle::Semaphore sem(0);
  spindle::Channel<int> to_threads(8), to_fibers(8);
  std::int64_t counter = 0;  // guarded by mutex
  std::atomic<int> acquired{0};
  const bool finished = spindle::test::run(
      [&] {
        spindle::WaitGroup done(6);
        std::vector<std::thread> threads;
        // Two plain threads: echo channel values back, and release semaphore permits.
        for (int t = 0; t < 2; ++t) {
          threads.emplace_back([&] {
            while (auto v = to_threads.recv()) {
              REQUIRE(to_fibers.send(*v));
              sem.release();
            }
          });
        }
        for (int f = 0; f < 2; ++f) {
          spindle::spawn([&, f] {
            Jitter jitter(seed + 100 + static_cast<std::uint64_t>(f));
            for (int r = 0; r < kRounds; ++r) {
              REQUIRE(to_threads.send(r));
              jitter();
              REQUIRE(to_fibers.recv());
            }
            done.done();
          });
          spindle::spawn([&, f] {
            Jitter jitter(seed + 200 + static_cast<std::uint64_t>(f));
            for (int r = 0; r < kRounds; ++r) {
              REQUIRE(sem.acquire());
              acquired++;
              jitter();
            }
            done.done();
          });
          spindle::spawn([&, f] {
            Jitter jitter(seed + 300 + static_cast<std::uint64_t>(f));
            for (int r = 0; r < kRounds; ++r) {
              std::unique_lock lock(mutex);
              // Alternate: fiber 0 waits for even counts, fiber 1 for odd ones.
              REQUIRE(cv.wait(lock, [&] { return counter % 2 == f; }));
              ++counter;
              cv.notify_all();
              lock.unlock();
              jitter();
            }
            done.done();
          });
        }
        const bool ok = done.wait_until(spindle::Clock::now() + kDeadline).value();
        to_threads.close();
        for (auto& t : threads) t.join();
        return ok;
      },
      spindle::Config{.workers = 4});
  INFO("seed " << seed);
  REQUIRE(finished);
  CHECK(acquired == 2 * kRounds);
  CHECK(counter == 2 * kRounds);
}
