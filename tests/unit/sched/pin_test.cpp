// PinToWorker: inside the scope a fiber stays on one worker thread across
// yields, sleeps and wake-ups from other workers and plain threads, while
// other fibers keep every worker busy. After the scope it may move again (not
// asserted: whether it does is up to the scheduler).
//
// Assertions run on the root fiber (or the main thread) only: children record
// what they saw and the root checks it after joining them.
#include <atomic>
#include <catch2/catch.hpp>
#include <stdexcept>
#include <thread>
#include <vector>

#include "runtime_harness.hpp"
#include "thread_now.hpp"

using namespace std::chrono_literals;
using spindle::Clock;
using spindle::PinToWorker;
namespace tf = spindle::this_fiber;

namespace {

constexpr int kSteps = 200;

// Keeps the workers busy (and stealing) until `stop`.
spindle::JoinHandle<void> spawn_busy(std::atomic<bool>& stop) {
  return spindle::spawn([&stop] {
    for (unsigned spin = 0; !stop.load(); ++spin) {
      if (spin % 8 == 0 && !tf::yield()) return;
    }
  });
}

// Yields and short sleeps, alternating; counts the steps that resumed on
// another thread than `home`.
int wander(std::thread::id home, int steps) {
  int moved = 0;
  for (int k = 0; k < steps; ++k) {
    (void)(k % 5 == 4 ? tf::sleep_for(100us) : tf::yield());
    if (spindle::test::thread_now() != home) ++moved;
  }
  return moved;
}

}  // namespace

TEST_CASE("pin: a pinned fiber stays on its worker across yields and sleeps", "[pin]") {
  spindle::test::on_workers(
      [] {
        constexpr int kPinned = 4;
        std::atomic<bool> stop{false};
        std::vector<spindle::JoinHandle<void>> busy;
        for (int i = 0; i < 6; ++i) busy.push_back(spawn_busy(stop));
        std::vector<spindle::JoinHandle<int>> pinned;
        for (int i = 0; i < kPinned; ++i) {
          pinned.push_back(spindle::spawn([] {
            // Move around a little first, unpinned.
            for (int k = 0; k < 10; ++k) (void)tf::yield();
            int moved = 0;
            {
              PinToWorker pin;
              moved += wander(spindle::test::thread_now(), kSteps);
            }
            // Free again: no assertion about where it runs now.
            for (int k = 0; k < 20; ++k) (void)tf::yield();
            return moved;
          }));
        }
        for (auto& p : pinned) CHECK(p.join().value() == 0);
        stop = true;
        for (auto& b : busy) CHECK(b.join().has_value());
      },
      {2, 4});
}

TEST_CASE("pin: scopes nest and the outermost one decides", "[pin]") {
  spindle::test::on_workers(
      [] {
        std::atomic<bool> stop{false};
        std::vector<spindle::JoinHandle<void>> busy;
        for (int i = 0; i < 4; ++i) busy.push_back(spawn_busy(stop));
        auto h = spindle::spawn([] {
          int moved = 0;
          PinToWorker outer;
          const auto home = spindle::test::thread_now();
          {
            PinToWorker inner;
            moved += wander(home, kSteps / 2);
          }
          // The inner scope ended; the outer one still pins.
          moved += wander(home, kSteps / 2);
          return moved;
        });
        CHECK(h.join().value() == 0);
        stop = true;
        for (auto& b : busy) CHECK(b.join().has_value());
      },
      {2, 4});
}

TEST_CASE("pin: a pinned fiber woken from other workers and threads resumes on its own worker",
          "[pin]") {
  spindle::test::on_workers(
      [] {
        constexpr int kFromFibers = 100;
        constexpr int kFromThread = 50;
        std::atomic<bool> stop{false};
        std::vector<spindle::JoinHandle<void>> busy;
        for (int i = 0; i < 4; ++i) busy.push_back(spawn_busy(stop));
        spindle::Channel<int> ch(0);
        spindle::Semaphore sem(0);
        spindle::Mutex m;
        std::atomic<bool> pinned_ready{false};
        auto pinned = spindle::spawn([&] {
          PinToWorker pin;
          const auto home = spindle::test::thread_now();
          pinned_ready = true;
          int moved = 0;
          long sum = 0;
          // Values from fibers on any worker and from a plain thread.
          for (int i = 0; i < kFromFibers + kFromThread; ++i) {
            auto r = ch.recv();
            if (!r) return -1;
            sum += *r;
            if (spindle::test::thread_now() != home) ++moved;
          }
          // Permits released by a plain thread.
          for (int i = 0; i < 20; ++i) {
            if (!sem.acquire()) return -1;
            if (spindle::test::thread_now() != home) ++moved;
          }
          // A mutex handed over by fibers elsewhere.
          for (int i = 0; i < 50; ++i) {
            m.lock();
            if (spindle::test::thread_now() != home) ++moved;
            m.unlock();
            (void)tf::yield();
          }
          if (sum != long{kFromFibers + kFromThread} * (kFromFibers + kFromThread - 1) / 2) {
            return -2;
          }
          return moved;
        });
        std::thread feeder([&] {
          for (int i = kFromFibers; i < kFromFibers + kFromThread; ++i) (void)ch.send(i);
          for (int i = 0; i < 20; ++i) {
            std::this_thread::sleep_for(100us);
            sem.release();
          }
        });
        std::vector<spindle::JoinHandle<void>> senders;
        for (int s = 0; s < 2; ++s) {
          senders.push_back(spindle::spawn([&, s] {
            for (int i = s; i < kFromFibers; i += 2) (void)ch.send(i);
          }));
        }
        std::vector<spindle::JoinHandle<void>> lockers;
        for (int l = 0; l < 2; ++l) {
          lockers.push_back(spindle::spawn([&] {
            for (int i = 0; i < 200; ++i) {
              std::lock_guard g(m);
              (void)tf::yield();
            }
          }));
        }
        CHECK(pinned.join().value() == 0);
        ch.close();  // releases any sender left blocked if the pinned fiber failed early
        for (auto& s : senders) CHECK(s.join().has_value());
        for (auto& l : lockers) CHECK(l.join().has_value());
        feeder.join();  // its sends and releases were all taken: it has finished
        stop = true;
        for (auto& b : busy) CHECK(b.join().has_value());
        CHECK(pinned_ready.load());
      },
      {2, 4});
}

TEST_CASE("pin: PinToWorker outside a fiber throws std::logic_error", "[pin]") {
  CHECK_THROWS_AS(PinToWorker(), std::logic_error);
}
