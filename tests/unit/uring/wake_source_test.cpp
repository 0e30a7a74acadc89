// WakeSource: cross-thread wakes of a blocking Ring::wait(), the multishot poll
// across cycles, draining, and a write that precedes arm().

#include "spindle/uring/wake_source.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "spindle/uring/ring.hpp"
#include "uring_test_support.hpp"

namespace spindle::uring {
namespace {

using namespace std::chrono_literals;
using test::make_ring;

// Aborts the test binary if it is still alive after `limit`: the wait under
// test has no timeout of its own.
class Watchdog {
 public:
  explicit Watchdog(std::chrono::seconds limit)
      : thread_([this, limit] {
          std::unique_lock lock(mu_);
          if (!cv_.wait_for(lock, limit, [this] { return done_; })) {
            std::fprintf(stderr, "watchdog: a wait() without timeout never returned\n");
            std::abort();
          }
        }) {}
  ~Watchdog() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_one();
    thread_.join();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;  // last: starts after the members it uses
};

TEST_CASE("uring wake source: signal() from another thread ends a wait() without timeout",
          "[uring][ring][wake]") {
  test::OwnedWakeSource wake;  // outlives the ring that polls it
  auto ring = make_ring(8);
  Watchdog watchdog(20s);
  wake.arm(*ring);
  ring->service();  // the poll is installed before the other thread starts
  std::thread signaller([&wake] {
    std::this_thread::sleep_for(50ms);
    wake.signal();
  });
  bool woken = false;
  int waits = 0;
  while (!woken && waits < 10) {
    wake.arm(*ring);
    ring->wait(std::nullopt);
    ++waits;
    woken = wake.consume();
  }
  signaller.join();
  CHECK(woken);
  CHECK(wake.armed());
}

TEST_CASE("uring wake source: the multishot poll keeps delivering across cycles",
          "[uring][ring][wake]") {
  test::OwnedWakeSource wake;
  auto ring = make_ring(8);
  wake.arm(*ring);  // once: the poll must survive every cycle below
  for (int cycle = 0; cycle < 5; ++cycle) {
    INFO("cycle " << cycle);
    wake.signal();
    bool woken = false;
    for (int round = 0; round < 10 && !woken; ++round) {
      ring->wait(1s);
      woken = wake.consume();
    }
    CHECK(woken);
    CHECK(wake.armed());
    // Drained: no further wake until the next signal.
    CHECK(ring->wait(10ms) == 0);
    CHECK_FALSE(wake.consume());
  }
}

TEST_CASE("uring wake source: a wake drained after consume() is not seen again",
          "[uring][ring][wake]") {
  test::OwnedWakeSource wake;
  auto ring = make_ring(8);
  CHECK_FALSE(wake.consume());
  wake.arm(*ring);
  wake.signal();
  wake.signal();
  wake.signal();
  bool woken = false;
  for (int round = 0; round < 10 && !woken; ++round) {
    ring->wait(1s);
    woken = wake.consume();
  }
  CHECK(woken);
  std::uint64_t value = 0;
  CHECK(::read(wake.fd(), &value, sizeof(value)) == -1);
  CHECK(errno == EAGAIN);
  CHECK_FALSE(wake.consume());
}

TEST_CASE("uring wake source: a signal before arm() is not lost", "[uring][ring][wake]") {
  test::OwnedWakeSource wake;
  auto ring = make_ring(8);
  wake.signal();
  wake.arm(*ring);
  bool woken = false;
  for (int round = 0; round < 10 && !woken; ++round) {
    ring->wait(1s);
    woken = wake.consume();
  }
  CHECK(woken);
}

}  // namespace
}  // namespace spindle::uring
