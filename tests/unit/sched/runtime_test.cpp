#include <signal.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <memory>
#include <set>
#include <stdexcept>
#include <thread>
#include <vector>

#include "runtime_harness.hpp"
#include "thread_now.hpp"

using namespace std::chrono_literals;
using spindle::errc;
namespace tf = spindle::this_fiber;

TEST_CASE("run returns the root's value, and void roots work", "[runtime]") {
  spindle::Runtime rt;
  CHECK(rt.run([] { return 42; }) == 42);
  CHECK(rt.run([] { return std::string("again"); }) == "again");  // run() is reusable
  bool ran = false;
  rt.run([&] { ran = true; });
  CHECK(ran);
  auto p = rt.run([] { return std::make_unique<int>(5); });
  REQUIRE(p);
  CHECK(*p == 5);
}

namespace {
void on_broken_pipe(int) {}

// SIGPIPE's disposition after `before` was set and a runtime ran.
struct sigaction pipe_action_after_run(const struct sigaction& before) {
  REQUIRE(::sigaction(SIGPIPE, &before, nullptr) == 0);
  spindle::Runtime rt;
  rt.run([] {});
  struct sigaction after{};
  REQUIRE(::sigaction(SIGPIPE, nullptr, &after) == 0);
  return after;
}
}  // namespace

TEST_CASE("a run ignores SIGPIPE at its default action, and keeps a handler the program set",
          "[runtime]") {
  struct sigaction saved{};
  REQUIRE(::sigaction(SIGPIPE, nullptr, &saved) == 0);
  struct sigaction dfl{};
  dfl.sa_handler = SIG_DFL;
  CHECK(pipe_action_after_run(dfl).sa_handler == SIG_IGN);
  struct sigaction handler{};
  handler.sa_handler = &on_broken_pipe;
  CHECK(pipe_action_after_run(handler).sa_handler == &on_broken_pipe);
  REQUIRE(::sigaction(SIGPIPE, &saved, nullptr) == 0);
}

TEST_CASE("the root runs on the calling thread", "[runtime]") {
  const auto caller = std::this_thread::get_id();
  spindle::test::on_workers([caller] {
    CHECK(spindle::test::thread_now() == caller);
    (void)tf::sleep_for(1ms);
    CHECK(spindle::test::thread_now() == caller);  // the root is pinned to worker 0
  });
}

TEST_CASE("spawn and join return values from many fibers", "[spawn]") {
  spindle::test::on_workers([] {
    std::vector<spindle::JoinHandle<int>> hs;
    for (int i = 0; i < 1000; ++i) hs.push_back(spindle::spawn([i] { return i * 2; }));
    long sum = 0;
    for (auto& h : hs) sum += h.join().value();
    CHECK(sum == 999 * 1000);
  });
}

TEST_CASE("fiber ids are unique and nonzero, zero on a plain thread", "[spawn]") {
  CHECK(tf::id() == 0);
  spindle::test::on_workers([] {
    std::vector<spindle::JoinHandle<std::uint64_t>> hs;
    for (int i = 0; i < 200; ++i) hs.push_back(spindle::spawn([] { return tf::id(); }));
    std::set<std::uint64_t> ids{tf::id()};
    for (auto& h : hs) ids.insert(h.join().value());
    CHECK(ids.size() == 201);
    CHECK(ids.count(0) == 0);
  });
}

TEST_CASE("a dropped handle detaches: the fiber still runs", "[spawn]") {
  spindle::test::on_workers([] {
    spindle::Event done;
    spindle::spawn([&] {
      (void)tf::sleep_for(2ms);
      done.set();
    });
    CHECK(done.wait_for(5s).value());
  });
}

TEST_CASE("a detached fiber's value is destroyed when it ends, on a busy worker too", "[spawn]") {
  spindle::test::on_workers([] {
    std::weak_ptr<int> value;
    spindle::Event returned;
    spindle::spawn([&] {
      auto p = std::make_shared<int>(7);
      value = p;
      returned.set();
      return p;
    }).detach();
    REQUIRE(returned.wait_for(5s).value());
    // Yielding keeps this worker from parking, so nothing but the fiber's
    // end can destroy the value.
    const auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!value.expired() && std::chrono::steady_clock::now() < deadline) (void)tf::yield();
    CHECK(value.expired());
  });
}

TEST_CASE("join twice: the value is taken by the first", "[spawn]") {
  spindle::test::run([] {
    auto h = spindle::spawn([] { return 1; });
    CHECK(h.join().value() == 1);
    auto again = h.join();
    REQUIRE_FALSE(again);
    CHECK(again.error() == errc::closed);
  });
}

TEST_CASE("yield lets the other ready fibers run first, FIFO", "[yield]") {
  spindle::test::run(
      [] {
        std::vector<int> order;
        auto a = spindle::spawn([&] {
          for (int i = 0; i < 3; ++i) {
            order.push_back(1);
            (void)tf::yield();
          }
        });
        auto b = spindle::spawn([&] {
          for (int i = 0; i < 3; ++i) {
            order.push_back(2);
            (void)tf::yield();
          }
        });
        (void)a.join();
        (void)b.join();
        CHECK(order == std::vector<int>{1, 2, 1, 2, 1, 2});
      },
      spindle::Config{.workers = 1});
}

TEST_CASE("sleep_for sleeps at least the duration, zero and past deadlines return at once",
          "[sleep]") {
  spindle::test::on_workers([] {
    auto t0 = spindle::Clock::now();
    REQUIRE(tf::sleep_for(10ms));
    CHECK(spindle::Clock::now() - t0 >= 10ms);
    t0 = spindle::Clock::now();
    REQUIRE(tf::sleep_for(0ms));
    REQUIRE(tf::sleep_for(-5ms));
    REQUIRE(tf::sleep_until(spindle::Clock::now() - 1s));
    REQUIRE(tf::sleep_until(std::chrono::system_clock::now() - 1s));
    CHECK(spindle::Clock::now() - t0 < 1s);
  });
}

TEST_CASE("many timers fire, each once, never early", "[sleep]") {
  spindle::test::on_workers([] {
    std::atomic<int> early{0}, fired{0};
    std::vector<spindle::JoinHandle<void>> hs;
    for (int i = 0; i < 2000; ++i) {
      hs.push_back(spindle::spawn([i, &early, &fired] {
        const auto d = std::chrono::microseconds(100 + (i * 37) % 5000);
        const auto t0 = spindle::Clock::now();
        REQUIRE(tf::sleep_for(d));
        if (spindle::Clock::now() - t0 < d) early++;
        fired++;
      }));
    }
    for (auto& h : hs) REQUIRE(h.join());
    CHECK(early == 0);
    CHECK(fired == 2000);
  });
}

TEST_CASE("far-future sleeps clamp instead of overflowing, and abort ends them", "[sleep]") {
  spindle::test::run([] {
    auto h = spindle::spawn([] { return tf::sleep_for(std::chrono::hours(24 * 365 * 1000)); });
    (void)tf::sleep_for(2ms);
    h.abort();
    auto r = h.join();
    REQUIRE_FALSE(r);
    CHECK(r.error() == errc::aborted);
  });
}

TEST_CASE("abort of a sleeping fiber: its sleep returns aborted and later calls too", "[abort]") {
  spindle::test::on_workers([] {
    std::atomic<int> stage{0};
    auto h = spindle::spawn([&] {
      auto r = tf::sleep_for(10s);
      CHECK(r.error() == errc::aborted);
      CHECK(tf::aborted());
      stage = 1;
      // Abort is sticky: every interruptible blocking call now fails at once.
      CHECK(tf::sleep_for(1ms).error() == errc::aborted);
      CHECK(tf::yield().error() == errc::aborted);
      spindle::Channel<int> ch(1);
      CHECK(ch.send(1).error() == errc::aborted);
      stage = 2;
    });
    (void)tf::sleep_for(1ms);
    h.abort();
    auto r = h.join();
    REQUIRE_FALSE(r);
    CHECK(r.error() == errc::aborted);
    CHECK(stage == 2);
  });
}

TEST_CASE("abort of a fiber blocked on a channel", "[abort]") {
  spindle::test::on_workers([] {
    spindle::Channel<int> ch;
    auto h = spindle::spawn([&] { return ch.recv(); });
    (void)tf::sleep_for(1ms);
    h.abort();
    auto r = h.join();
    REQUIRE_FALSE(r);
    CHECK(r.error() == errc::aborted);
    // The channel still works for others.
    auto s = spindle::spawn([&] { return ch.send(9); });
    CHECK(ch.recv().value() == 9);
    CHECK(s.join().value().has_value());
  });
}

TEST_CASE("a fiber aborted before it starts never runs its body", "[abort]") {
  spindle::test::run(
      [] {
        std::atomic<bool> ran{false};
        auto h = spindle::spawn([&] { ran = true; });
        h.abort();  // single worker: the root has not yielded, so it has not started
        auto r = h.join();
        REQUIRE_FALSE(r);
        CHECK(r.error() == errc::aborted);
        CHECK_FALSE(ran);
      },
      spindle::Config{.workers = 1});
}

TEST_CASE("supervision: a fiber ends, its descendants are aborted and siblings survive",
          "[supervision]") {
  spindle::test::on_workers([] {
    spindle::Event child_started, grandchild_started;
    std::atomic<int> child_result{-1}, grandchild_result{-1}, sibling_done{0};
    auto parent = spindle::spawn([&] {
      spindle::spawn([&] {
        spindle::spawn([&] {
          grandchild_started.set();
          grandchild_result = tf::sleep_for(10s).error() == errc::aborted ? 1 : 0;
        });
        child_started.set();
        child_result = tf::sleep_for(10s).error() == errc::aborted ? 1 : 0;
      });
      REQUIRE(child_started.wait());
      REQUIRE(grandchild_started.wait());
      // parent returns: its child and grandchild are aborted
    });
    auto sibling = spindle::spawn([&] {
      (void)tf::sleep_for(20ms);
      sibling_done = 1;
    });
    REQUIRE(parent.join());
    REQUIRE(sibling.join());
    for (int i = 0; i < 1000 && (child_result < 0 || grandchild_result < 0); ++i)
      (void)tf::sleep_for(1ms);
    CHECK(child_result == 1);
    CHECK(grandchild_result == 1);
    CHECK(sibling_done == 1);
  });
}

TEST_CASE("spawning from an aborted context does not run the body", "[supervision]") {
  spindle::test::on_workers([] {
    std::atomic<bool> ran{false};
    auto h = spindle::spawn([&]() -> bool {
      (void)tf::sleep_for(10s);  // aborted
      auto inner = spindle::spawn([&] { ran = true; });
      return !inner.join() && inner.join().error() == errc::aborted;
    });
    (void)tf::sleep_for(1ms);
    h.abort();
    CHECK(h.join().error() == errc::aborted);
    (void)tf::sleep_for(5ms);
    CHECK_FALSE(ran);
    // A context kept from a finished fiber is closed too.
    auto ctx = spindle::spawn([] { return tf::context(); }).join().value();
    CHECK(ctx.aborted());
    CHECK(ctx.spawn([&] { ran = true; }).join().error() == errc::aborted);
    CHECK_FALSE(ran);
  });
}

TEST_CASE("a context kept from the root spawns fibers that outlive their spawner",
          "[supervision]") {
  spindle::test::on_workers([] {
    auto root = tf::context();
    spindle::Channel<int> out(16);
    // A chain: each link spawns the next through the root's context and ends.
    struct Link {
      spindle::Context root;
      spindle::Channel<int>* out;
      int left;
      void operator()() const {
        if (left == 0) {
          (void)out->send(1);
          return;
        }
        root.spawn(Link{root, out, left - 1});
      }
    };
    root.spawn(Link{root, &out, 1000});
    CHECK(out.recv_for(10s).value() == 1);
  });
}

TEST_CASE("catch_exceptions=false: a fiber's exception fails run() after shutdown",
          "[exceptions]") {
  for (std::size_t workers : {1, 2, 4}) {
    spindle::Runtime rt(spindle::Config{.workers = workers});
    std::atomic<bool> root_aborted{false};
    try {
      rt.run([&] {
        spindle::spawn([] { throw std::runtime_error("fiber failed"); });
        root_aborted = tf::sleep_for(10s).error() == errc::aborted;
      });
      FAIL("run() returned");
    } catch (const std::runtime_error& e) {
      CHECK(std::string(e.what()) == "fiber failed");
    }
    CHECK(root_aborted);
  }
}

TEST_CASE("catch_exceptions=true: join reports exited and get() rethrows", "[exceptions]") {
  spindle::test::on_workers(
      [] {
        auto h = spindle::spawn([]() -> int { throw std::logic_error("caught one"); });
        auto r = h.join();
        REQUIRE_FALSE(r);
        CHECK(r.error() == errc::exited);
        auto g = spindle::spawn([]() -> int { throw std::logic_error("caught two"); });
        CHECK_THROWS_WITH(g.get(), "caught two");
        // The runtime keeps going.
        CHECK(spindle::spawn([] { return 3; }).join().value() == 3);
      },
      {1, 2}, spindle::Config{.catch_exceptions = true});
}

TEST_CASE("an exception from the root is rethrown by run()", "[exceptions]") {
  spindle::Runtime rt;
  CHECK_THROWS_WITH(rt.run([]() -> int { throw std::runtime_error("root failed"); }),
                    "root failed");
  CHECK(rt.run([] { return 1; }) == 1);
}

TEST_CASE("an exception caught in a fiber survives a park and a move to another worker",
          "[exceptions]") {
  spindle::test::on_workers([] {
    std::vector<spindle::JoinHandle<bool>> hs;
    for (int i = 0; i < 16; ++i) {
      hs.push_back(spindle::spawn([] {
        try {
          throw std::runtime_error("inner");
        } catch (...) {
          for (int k = 0; k < 5; ++k) (void)tf::sleep_for(100us);
          try {
            throw;  // rethrows the exception this fiber is handling
          } catch (const std::runtime_error& e) {
            return std::string(e.what()) == "inner" && std::uncaught_exceptions() == 0;
          }
        }
      }));
    }
    for (auto& h : hs) CHECK(h.join().value());
  });
}

TEST_CASE("spawn_blocking runs off the workers and returns its value", "[blocking]") {
  spindle::test::on_workers([] {
    const auto worker_thread = std::this_thread::get_id();
    auto h = spindle::spawn_blocking([] {
      std::this_thread::sleep_for(5ms);  // a real blocking call
      return std::this_thread::get_id();
    });
    CHECK(h.join().value() != worker_thread);
  });
}

TEST_CASE("join_uninterruptible in an aborted fiber waits for its blocking task's end",
          "[blocking]") {
  spindle::test::on_workers([] {
    std::atomic<bool> release{false}, ended{false}, saw_end{false};
    std::error_code first;
    auto waiter = spindle::spawn([&] {
      auto h = spindle::spawn_blocking([&] {
        while (!release.load()) std::this_thread::sleep_for(1ms);
        ended = true;
      });
      first = h.join().error();  // ended by the abort
      (void)h.join_uninterruptible();
      saw_end = ended.load();
    });
    (void)tf::sleep_for(spindle::test::kSettle);
    waiter.abort();
    (void)tf::sleep_for(spindle::test::kSettle);
    CHECK_FALSE(waiter.is_finished());  // still in join_uninterruptible
    release = true;
    (void)waiter.join();
    CHECK(first == errc::aborted);
    CHECK(saw_end);
  });
}

TEST_CASE("the blocking pool never runs more than blocking_threads at once", "[blocking]") {
  spindle::test::on_workers(
      [] {
        std::atomic<int> running{0}, peak{0};
        std::vector<spindle::JoinHandle<void>> hs;
        for (int i = 0; i < 8; ++i) {
          hs.push_back(spindle::spawn_blocking([&] {
            const int now = ++running;
            int p = peak;
            while (now > p && !peak.compare_exchange_weak(p, now)) {
            }
            std::this_thread::sleep_for(3ms);
            --running;
          }));
        }
        for (auto& h : hs) REQUIRE(h.join());
        CHECK(peak <= 2);
        CHECK(peak >= 1);
      },
      {2}, spindle::Config{.blocking_threads = 2});
}

TEST_CASE("spawn_dedicated runs on its own thread and its children run on the pool",
          "[dedicated]") {
  spindle::test::on_workers([] {
    std::set<std::thread::id> pool;
    pool.insert(std::this_thread::get_id());
    auto h = spindle::spawn_dedicated([] {
      const auto me = spindle::test::thread_now();
      (void)tf::sleep_for(1ms);
      const bool stayed = spindle::test::thread_now() == me;  // pinned to its thread
      auto child = spindle::spawn([] { return std::this_thread::get_id(); });
      return std::make_tuple(me, stayed, child.join().value());
    });
    auto [dedicated, stayed, child_thread] = h.join().value();
    CHECK(dedicated != std::this_thread::get_id());
    CHECK(stayed);
    CHECK(child_thread != dedicated);
  });
}

TEST_CASE("a RuntimeHandle spawns and joins from a plain thread", "[handle]") {
  spindle::test::on_workers([] {
    auto handle = spindle::current_runtime();
    std::atomic<int> result{0};
    std::thread t([&] {
      auto h = handle.spawn([] {
        (void)tf::sleep_for(1ms);
        return 11;
      });
      result = h.join().value();  // a plain thread blocks on a futex
    });
    // The root keeps its worker free while the thread waits.
    while (result == 0) (void)tf::sleep_for(1ms);
    t.join();
    CHECK(result == 11);
    CHECK(handle.running());
  });
}

TEST_CASE("after run() ends, spawns through a kept handle do not run", "[handle]") {
  spindle::Runtime rt;
  auto handle = rt.run([] { return spindle::current_runtime(); });
  CHECK_FALSE(handle.running());
  bool ran = false;
  auto h = handle.spawn([&] { ran = true; });
  CHECK(h.join().error() == errc::aborted);
  CHECK_FALSE(ran);
}

TEST_CASE("calls that need a fiber say so outside one", "[runtime]") {
  CHECK_THROWS_AS(spindle::this_fiber::context(), std::logic_error);
  CHECK_THROWS_AS(spindle::current_runtime(), std::logic_error);
  CHECK_THROWS_AS(spindle::spawn([] {}), std::logic_error);
  CHECK_FALSE(tf::aborted());
  CHECK(tf::yield());
  CHECK(tf::sleep_for(1ms));  // plain thread: just sleeps
}

TEST_CASE("a fiber cannot run a nested runtime", "[runtime]") {
  spindle::test::run([] {
    spindle::Runtime inner;
    CHECK_THROWS_AS(inner.run([] { return 1; }), std::logic_error);
    // The outer runtime is unharmed.
    CHECK(spindle::spawn([] { return 2; }).join().value() == 2);
  });
}

TEST_CASE("current_config returns the runtime's validated configuration", "[runtime]") {
  CHECK_THROWS_AS(spindle::current_config(), std::logic_error);
  spindle::test::run(
      [] {
        const auto& c = spindle::current_config();
        CHECK(c.workers == 3);
        CHECK(c.ring_entries == 8);  // rounded up from 5
        CHECK(spindle::spawn([] { return spindle::current_config().workers; }).join().value() == 3);
      },
      spindle::Config{.workers = 3, .ring_entries = 5});
}
