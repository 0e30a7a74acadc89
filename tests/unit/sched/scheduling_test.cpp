// White-box checks of the scheduler's queues.
#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <set>
#include <thread>

#include "core/current.hpp"
#include "core/scheduler.hpp"
#include "core/worker.hpp"
#include "exposition.hpp"
#include "runtime_harness.hpp"
#include "skip.hpp"
#include "spindle/sched/io.hpp"
#include "thread_now.hpp"

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
        CHECK(sched.global.len() + spindle::detail::current_worker()->remote().run_queue().len() ==
              1000);
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

TEST_CASE("an idle worker runs a fiber queued alone behind one that keeps its worker busy",
          "[queues]") {
  spindle::test::run(
      [] {
        // One child is not stolen at once (its worker may be about to run it);
        // it moves once the spawner's turn outlasts the watch. Round 1 starts
        // with both workers parked long enough for nobody to be watching.
        const auto me = std::this_thread::get_id();
        for (int round = 0; round < 2; ++round) {
          if (round == 1) REQUIRE(tf::sleep_for(50ms));
          std::atomic<bool> child_ran{false};
          auto child = spindle::spawn([&, me] { child_ran = std::this_thread::get_id() != me; });
          const auto until = std::chrono::steady_clock::now() + 5s;
          while (!child_ran && std::chrono::steady_clock::now() < until) {
          }
          CHECK(child_ran);
          REQUIRE(child.join());
        }
      },
      spindle::Config{.workers = 2});
}

TEST_CASE("a worker parked while every other is parked too does not wake to watch", "[queues]") {
  spindle::test::run(
      [] {
        const auto parks = [] {
          return spindle::test::metric_value(spindle::current_runtime().metrics_text(),
                                             "runtime_worker_parks_total", {{"worker", "1"}});
        };
        REQUIRE(tf::sleep_for(20ms));
        const auto before = parks();
        REQUIRE(before);
        // Worker 0 parks in the sleep too. A watch would end every 100 us to
        // 1.6 ms, at least 125 times in 200 ms; worker 1 gives it up instead.
        REQUIRE(tf::sleep_for(200ms));
        const auto after = parks();
        REQUIRE(after);
        CHECK(*after - *before <= 10);
      },
      spindle::Config{.workers = 2});
}

TEST_CASE("a join runs a child that has not started at once, and the joiner resumes when it ends",
          "[join]") {
  spindle::test::run(
      [] {
        std::vector<char> order;
        auto queued = spindle::spawn([&] { order.push_back('q'); });
        auto child = spindle::spawn([&] { order.push_back('c'); });
        REQUIRE(child.join());
        order.push_back('p');
        REQUIRE(queued.join());
        // FIFO order would be q, c, p: the join went ahead of the queue, and the
        // ended child handed its worker back to its joiner.
        CHECK(order == std::vector<char>{'c', 'p', 'q'});
      },
      spindle::Config{.workers = 1});
}

namespace {

struct TreeStats {
  int live = 0;
  int peak = 0;
};

// A fork-join tree of `fanout`-ary fibers, `depth` levels below this one.
std::uint64_t fork_join(TreeStats& s, int depth, int fanout) {
  s.peak = std::max(s.peak, ++s.live);
  std::uint64_t leaves = 1;
  if (depth > 0) {
    std::vector<spindle::JoinHandle<std::uint64_t>> children;
    for (int i = 0; i < fanout; ++i) {
      children.push_back(
          spindle::spawn([&s, depth, fanout] { return fork_join(s, depth - 1, fanout); }));
    }
    leaves = 0;
    for (auto& c : children) leaves += c.join().value();
  }
  --s.live;
  return leaves;
}

}  // namespace

TEST_CASE("a fork-join tree runs depth first: few of its fibers are running at once", "[join]") {
  spindle::test::run(
      [] {
        TreeStats s;
        REQUIRE(fork_join(s, 4, 10) == 10'000);
        CHECK(s.live == 0);
        // Run in spawn order, hundreds of the 1,111 inner fibers would wait in
        // joins at once.
        INFO("peak " << s.peak);
        CHECK(s.peak < 100);
      },
      spindle::Config{.workers = 1});
}

TEST_CASE("a fiber that spawns and joins in a loop leaves its worker to the others in turn",
          "[join]") {
  spindle::test::run(
      [] {
        constexpr std::uint64_t kLimit = 1'000'000;
        std::atomic<bool> stop{false};
        // Joined by the root at once, so the loop runs straight away; `other`
        // is only queued, and gets the worker only if the loop gives it up.
        auto other = spindle::spawn([&] { stop = true; });
        auto loop = spindle::spawn([&] {
          std::uint64_t n = 0;
          while (!stop && n < kLimit) {
            REQUIRE(spindle::spawn([] {}).join());
            ++n;
          }
          return n;
        });
        const std::uint64_t n = loop.join().value();
        CHECK(n > 0);
        CHECK(n < kLimit);
        REQUIRE(other.join());
      },
      spindle::Config{.workers = 1});
}

TEST_CASE("two fibers waking each other leave their worker to the others in turn", "[queues]") {
  spindle::test::run(
      [] {
        constexpr std::uint64_t kLimit = 1'000'000;
        std::atomic<bool> stop{false};
        spindle::Channel<std::uint64_t> ping, pong;
        spindle::JoinHandle<void> other;
        // Each wakes the other through the next-fiber slot; `other`, spawned
        // once the two are passing values, is only queued, and gets the worker
        // only if the pair gives it up.
        auto pinger = spindle::spawn([&] {
          std::uint64_t n = 0;
          while (!stop && n < kLimit) {
            REQUIRE(ping.send(n));
            REQUIRE(pong.recv().value() == n);
            if (++n == 1) other = spindle::spawn([&] { stop = true; });
          }
          ping.close();
          return n;
        });
        auto ponger = spindle::spawn([&] {
          while (auto v = ping.recv()) REQUIRE(pong.send(*v));
        });
        const std::uint64_t n = pinger.join().value();
        CHECK(n > 0);
        CHECK(n < kLimit);
        REQUIRE(ponger.join());
        REQUIRE(other.join());
      },
      spindle::Config{.workers = 1});
}

TEST_CASE("a fiber woken alone on an idle worker moves to a worker spinning on its own I/O",
          "[queues][io]") {
  // Spins long enough that an idle worker with a read in flight is still
  // spinning when the test's write comes.
  spindle::Config config{.workers = 2};
  config.idle_spinner = {.budget_us = 500'000, .max_budget_us = 500'000, .quick_wake_us = 10};
  spindle::test::run(
      [] {
        if (spindle::current_runtime().io_backend() != "io_uring") {
          SPINDLE_SKIP(
              "io_uring-specific: only a backend that shows completions without a system call "
              "spins on them, which is when a worker sees another idle beside it");
        }
        const auto read_byte = [](int fd) {
          unsigned char c = 0;
          return spindle::io::read(fd, std::as_writable_bytes(std::span(&c, 1)), 0).value_or(0);
        };
        auto& workers = spindle::detail::current_worker()->scheduler().workers;
        // One try: a parks on the root's worker, b on the other; both
        // workers spin idle; b's read completes alone. Whether b then ran on
        // a's thread. A worker's spin can end early (a wake-up to watch, a
        // thread the OS preempts for longer than the spin), so a try may see
        // no hand-over; three in a row would not.
        const auto moved = [&] {
          int to_b[2], to_a[2];
          REQUIRE(::pipe2(to_b, O_CLOEXEC) == 0);
          REQUIRE(::pipe2(to_a, O_CLOEXEC) == 0);
          // Spawned from a plain thread, b goes to the global queue while the
          // root keeps its own worker busy: the other worker runs it.
          std::atomic<std::thread::id> b_before{}, b_after{}, a_thread{};
          spindle::JoinHandle<void> b;
          std::thread spawner([&, handle = spindle::current_runtime()]() mutable {
            b = handle.spawn([&] {
              b_before = spindle::test::thread_now();
              REQUIRE(read_byte(to_b[0]) == 1);
              b_after = spindle::test::thread_now();
              REQUIRE(::write(to_a[1], "a", 1) == 1);
            });
          });
          const auto until = std::chrono::steady_clock::now() + 5s;
          while (b_before.load() == std::thread::id{} && std::chrono::steady_clock::now() < until) {
          }
          spawner.join();
          REQUIRE(b_before.load() != std::thread::id{});
          REQUIRE(b_before.load() != spindle::test::thread_now());
          // A fresh turn, so that nothing counts the root's worker as stuck
          // and takes a from it; a parks on the root's worker.
          REQUIRE(tf::yield());
          auto a = spindle::spawn([&] {
            a_thread = spindle::test::thread_now();
            REQUIRE(read_byte(to_a[0]) == 1);
          });
          std::atomic<bool> both_spun{false}, wrote{false};
          std::thread writer([&] {
            const auto give_up = std::chrono::steady_clock::now() + 5s;
            while (!both_spun && std::chrono::steady_clock::now() < give_up) {
              both_spun = workers[0]->io_spinning.load() && workers[1]->io_spinning.load();
            }
            wrote = ::write(to_b[1], "b", 1) == 1;
          });
          REQUIRE(b.join());
          REQUIRE(a.join());
          writer.join();
          REQUIRE(wrote);
          REQUIRE(both_spun);
          REQUIRE(a_thread.load() != b_before.load());
          for (int fd : {to_b[0], to_b[1], to_a[0], to_a[1]}) ::close(fd);
          return b_after.load() == a_thread.load();
        };
        bool any = false;
        for (int i = 0; i < 3 && !any; ++i) any = moved();
        CHECK(any);
        CHECK(spindle::test::metric_value(spindle::current_runtime().metrics_text(),
                                          "runtime_io_hand_overs_total") >= 1);
      },
      config);
}
