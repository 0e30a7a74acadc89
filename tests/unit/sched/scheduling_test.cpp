// White-box checks of the scheduler's queues.
#include <catch2/catch.hpp>
#include <atomic>
#include <set>
#include <thread>

#include "runtime_harness.hpp"
#include "scheduler.hpp"
#include "worker.hpp"

using namespace std::chrono_literals;
namespace tf = spindle::this_fiber;

TEST_CASE("a full run queue overflows half of itself to the global queue", "[queues]") {
  spindle::test::run(
      [] {
        auto& sched = spindle::detail::current_worker()->scheduler();
        std::atomic<int> ran{0};
        CHECK(sched.global.len() == 0);
        for (int i = 0; i < 1000; ++i) spindle::spawn([&] { ran++; });
        // 1000 spawns into a 256-slot queue without yielding: the excess went global.
        CHECK(sched.global.len() > 0);
        CHECK(sched.global.len() + spindle::detail::current_worker()->run_queue().len() == 1000);
        while (ran < 1000) (void)tf::yield();
        CHECK(sched.global.len() == 0);
      },
      spindle::Config{.workers = 1});
}

TEST_CASE("spawns from a plain thread go through the global queue to the workers", "[queues]") {
  spindle::test::run([] {
    auto handle = spindle::current_runtime();
    std::set<std::thread::id> threads;
    spindle::Mutex m;
    spindle::Event joined;
    std::thread t([&] {
      std::vector<spindle::JoinHandle<void>> hs;
      for (int i = 0; i < 500; ++i) {
        hs.push_back(handle.spawn([&] {
          std::scoped_lock lock(m);
          threads.insert(std::this_thread::get_id());
        }));
      }
      for (auto& h : hs) REQUIRE(h.join());
      joined.set();
    });
    // The root parks (never blocking its worker) while the workers run them.
    REQUIRE(joined.wait());
    const auto spawner = t.get_id();
    t.join();
    CHECK(threads.size() >= 1);
    CHECK_FALSE(threads.count(spawner));
  });
}

TEST_CASE("an idle worker steals work queued on a busy one", "[queues]") {
  spindle::test::run(
      [] {
        // The root keeps worker 0 busy, never parking, while it spawns: only a
        // steal (or the global queue) can get fibers to worker 1.
        std::atomic<int> elsewhere{0}, done{0};
        const auto me = std::this_thread::get_id();
        for (int i = 0; i < 200; ++i) {
          spindle::spawn([&, me] {
            if (std::this_thread::get_id() != me) elsewhere++;
            done++;
          });
        }
        const auto until = std::chrono::steady_clock::now() + 5s;
        while (elsewhere == 0 && std::chrono::steady_clock::now() < until) {
        }
        CHECK(elsewhere > 0);
        while (done < 200) (void)tf::yield();
      },
      spindle::Config{.workers = 2});
}
