// Once and OnceCell: the initializer runs exactly once among concurrent fibers
// and plain threads, get() never blocks, and a throwing initializer leaves the
// cell empty for a waiter or a later caller to try again.
//
// Assertions run on the root fiber (or the main thread) only: children record
// what they saw and the root checks it after joining them.
#include <atomic>
#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "runtime_harness.hpp"

using namespace std::chrono_literals;
using spindle::Once;
using spindle::OnceCell;
namespace tf = spindle::this_fiber;
using spindle::test::eventually;

TEST_CASE("once: call runs fn exactly once among fibers and plain threads", "[once][thread]") {
  spindle::test::on_workers([] {
    constexpr int kFibers = 12;
    constexpr int kThreads = 2;
    Once once;
    CHECK_FALSE(once.done());
    std::atomic<int> runs{0};
    int value = 0;  // written by the one run, read by every caller after call()
    std::atomic<int> saw_value{0};
    spindle::test::on_threads_and_fibers(kThreads, kFibers, [&](int) {
      once.call([&] {
        runs++;
        (void)tf::sleep_for(1ms);  // others arrive and wait meanwhile
        value = 7;
      });
      if (value == 7) saw_value++;
    });
    CHECK(runs.load() == 1);
    CHECK(saw_value.load() == kFibers + kThreads);
    CHECK(once.done());
    once.call([&] { runs++; });  // done: fn does not run again
    CHECK(runs.load() == 1);
  });
}

TEST_CASE("once_cell: get_or_init stores the first value and get sees it without blocking",
          "[once_cell][thread]") {
  spindle::test::on_workers([] {
    constexpr int kFibers = 8;
    constexpr int kThreads = 2;
    OnceCell<std::string> cell;
    CHECK(cell.get() == nullptr);
    std::atomic<int> runs{0};
    std::atomic<int> right{0};
    spindle::test::on_threads_and_fibers(kThreads, kFibers, [&](int id) {
      const std::string& v = cell.get_or_init([&] {
        runs++;
        (void)tf::yield();
        return "made by " + std::to_string(id);
      });
      const std::string* seen = cell.get();
      if (seen == &v && v.starts_with("made by ")) right++;
    });
    CHECK(runs.load() == 1);
    CHECK(right.load() == kFibers + kThreads);
    const std::string* stored = cell.get();
    REQUIRE(stored != nullptr);
    CHECK(&cell.get_or_init([] { return std::string("never"); }) == stored);
    const OnceCell<std::string>& view = cell;
    CHECK(view.get() == stored);
  });
}

TEST_CASE("once_cell: a throwing initializer leaves the cell empty and a waiter tries again",
          "[once_cell][retry]") {
  spindle::test::on_workers([] {
    constexpr int kWaiters = 4;
    OnceCell<int> cell;
    spindle::Event fail_now;
    std::atomic<bool> in_first{false};
    std::atomic<int> runs{0};
    std::atomic<int> got_value{0};
    // Written by the first caller before it ends; read after join.
    bool first_threw = false;
    auto first = spindle::spawn([&] {
      try {
        (void)cell.get_or_init([&]() -> int {
          in_first = true;
          (void)fail_now.wait();
          throw std::runtime_error("first initializer fails");
        });
      } catch (const std::runtime_error&) {
        first_threw = true;
      }
    });
    REQUIRE(eventually([&] { return in_first.load(); }));
    CHECK(cell.get() == nullptr);
    auto waiter = [&] {
      if (cell.get_or_init([&] {
            runs++;
            return 42;
          }) == 42) {
        got_value++;
      }
    };
    std::vector<spindle::JoinHandle<void>> hs;
    for (int i = 0; i < kWaiters - 1; ++i) hs.push_back(spindle::spawn(waiter));
    spindle::Event thread_done;
    std::thread t([&] {
      waiter();
      thread_done.set();
    });
    (void)tf::sleep_for(spindle::test::kSettle);  // let the waiters park
    CHECK(cell.get() == nullptr);
    CHECK(runs.load() == 0);
    fail_now.set();
    REQUIRE(first.join().has_value());
    for (auto& h : hs) CHECK(h.join().has_value());
    CHECK(thread_done.wait().has_value());
    t.join();
    CHECK(first_threw);
    CHECK(runs.load() == 1);  // one waiter retried; the rest took its value
    CHECK(got_value.load() == kWaiters);
    REQUIRE(cell.get() != nullptr);
    CHECK(*cell.get() == 42);
  });
}

TEST_CASE("once: after a throwing fn with nobody waiting, the next call runs its fn",
          "[once][retry]") {
  spindle::test::on_workers([] {
    Once once;
    int attempts = 0;
    CHECK_THROWS_AS(once.call([&] {
      ++attempts;
      throw std::runtime_error("fails");
    }),
                    std::runtime_error);
    CHECK_FALSE(once.done());
    CHECK_THROWS_AS(once.call([&] {
      ++attempts;
      throw std::logic_error("fails again");
    }),
                    std::logic_error);
    CHECK_FALSE(once.done());
    once.call([&] { ++attempts; });
    CHECK(once.done());
    once.call([&] { ++attempts; });
    CHECK(attempts == 3);

    OnceCell<int> cell;
    CHECK_THROWS(cell.get_or_init([]() -> int { throw std::runtime_error("no"); }));
    CHECK(cell.get() == nullptr);
    CHECK(cell.get_or_init([] { return 5; }) == 5);
    CHECK(*cell.get() == 5);
  });
}

TEST_CASE("once: works between plain threads with no runtime", "[once][thread]") {
  constexpr int kThreads = 4;
  OnceCell<int> cell;
  std::atomic<int> runs{0};
  std::atomic<int> right{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      if (cell.get_or_init([&] {
            runs++;
            std::this_thread::sleep_for(1ms);
            return 9;
          }) == 9) {
        right++;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(runs.load() == 1);
  CHECK(right.load() == kThreads);
}
