// spindle::sim::Runtime: one seed gives one run (the same digest, the same
// order of events), different seeds give different schedules, virtual time
// moves only when every fiber is blocked, and what cannot be simulated is
// refused with a clear error.
#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <catch2/catch.hpp>
#include <chrono>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "spindle/spindle.hpp"

using namespace std::chrono_literals;
using spindle::Channel;
using spindle::Clock;
using spindle::Deadline;
using spindle::errc;
namespace sim = spindle::sim;
namespace tf = spindle::this_fiber;

namespace {

// A program with many ready fibers at once: spawns, yields, channels, a
// mutex, select and timers. Returns the order in which its fibers did
// their steps, which depends on every scheduling choice.
std::vector<int> busy_program() {
  std::vector<int> trace;
  Channel<int> ch(2);
  spindle::Mutex mutex;
  std::vector<spindle::JoinHandle<void>> fibers;
  for (int i = 0; i < 8; ++i) {
    fibers.push_back(spindle::spawn([&, i] {
      for (int step = 0; step < 5; ++step) {
        {
          std::lock_guard lock(mutex);
          trace.push_back(i * 10 + step);
        }
        if (step % 2 == 0) {
          (void)tf::yield();
        } else {
          (void)tf::sleep_for(std::chrono::milliseconds(1 + i % 3));
        }
      }
      (void)ch.send(i);
    }));
  }
  Channel<int> other(1);
  for (int n = 0; n < 8; ++n) {
    spindle::RecvCase from_ch(ch), from_other(other);
    spindle::TimerCase timer(Clock::now() + 1s);
    const std::size_t fired = spindle::select(from_ch, from_other, timer).value();
    REQUIRE(fired == 0);
    trace.push_back(100 + from_ch.result().value());
  }
  for (auto& f : fibers) REQUIRE(f.join().has_value());
  return trace;
}

struct Outcome {
  std::vector<int> trace;
  std::uint64_t digest;
  std::uint64_t steps;
};

Outcome run_seed(std::uint64_t seed) {
  sim::Runtime rt(sim::Config{.seed = seed});
  auto trace = rt.run(busy_program);
  return {std::move(trace), rt.digest(), rt.steps()};
}

template <class F>
std::string failure_of(F&& program) {
  sim::Runtime rt(sim::Config{.seed = 7});
  try {
    rt.run(std::forward<F>(program));
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(the run did not fail)";
}

}  // namespace

TEST_CASE("sim: one seed gives the same run every time", "[sim]") {
  const Outcome first = run_seed(42);
  REQUIRE(first.trace.size() == 8 * 5 + 8);
  REQUIRE(first.steps > 8 * 5);
  for (int run = 1; run < 100; ++run) {
    const Outcome again = run_seed(42);
    INFO("run " << run);
    REQUIRE(again.digest == first.digest);
    REQUIRE(again.steps == first.steps);
    REQUIRE(again.trace == first.trace);
  }
}

TEST_CASE("sim: different seeds give different schedules", "[sim]") {
  std::set<std::uint64_t> digests;
  std::set<std::vector<int>> traces;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const Outcome o = run_seed(seed);
    digests.insert(o.digest);
    traces.insert(o.trace);
  }
  CHECK(digests.size() == 20);
  // Eight fibers racing for one mutex: the orders of twenty seeds differ.
  CHECK(traces.size() >= 15);
}

TEST_CASE("sim: an hour's sleep takes virtual time, not real time", "[sim]") {
  sim::Runtime rt(sim::Config{.seed = 1});
  const auto real_start = std::chrono::steady_clock::now();
  const auto slept = rt.run([] {
    const Deadline before = Clock::now();
    REQUIRE(tf::sleep_for(1h).has_value());
    return Clock::now() - before;
  });
  const auto real = std::chrono::steady_clock::now() - real_start;
  CHECK(slept == 1h);  // the clock jumps to the timer, exactly
  CHECK(rt.elapsed() >= 1h);
  CHECK(real < 10s);
}

TEST_CASE("sim: virtual time stands still while any fiber is ready", "[sim]") {
  sim::Runtime rt(sim::Config{.seed = 3});
  rt.run([] {
    const Deadline start = Clock::now();
    bool woke = false;
    Deadline woke_at{};
    auto sleeper = spindle::spawn([&] {
      REQUIRE(tf::sleep_for(1ms).has_value());
      woke = true;
      woke_at = Clock::now();
    });
    for (int i = 0; i < 10'000; ++i) {
      REQUIRE(tf::yield().has_value());
      REQUIRE(Clock::now() == start);
      REQUIRE_FALSE(woke);
    }
    REQUIRE(sleeper.join().has_value());
    CHECK(woke_at == start + 1ms);
  });
}

TEST_CASE("sim: timeouts and deadlines fire at their virtual time", "[sim]") {
  sim::Runtime rt(sim::Config{.seed = 5});
  rt.run([] {
    Channel<int> ch(0);
    const Deadline start = Clock::now();
    auto r = ch.recv_for(5s);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == errc::timed_out);
    CHECK(Clock::now() == start + 5s);
    // Sleepers wake in the order of their deadlines, each at its own.
    std::vector<int> order;
    std::vector<spindle::JoinHandle<void>> sleepers;
    for (int i : {3, 1, 2}) {
      sleepers.push_back(spindle::spawn([&order, i, start] {
        REQUIRE(tf::sleep_for(std::chrono::seconds(i)).has_value());
        CHECK(Clock::now() >= start + 5s + std::chrono::seconds(i));
        order.push_back(i);
      }));
    }
    for (auto& s : sleepers) REQUIRE(s.join().has_value());
    CHECK(order == std::vector<int>{1, 2, 3});
  });
}

// Every timed primitive, on virtual time: each wait ends exactly when its
// time says. Returns the virtual times at which they ended, from the start.
std::vector<std::chrono::nanoseconds> timed_primitives() {
  const Deadline start = Clock::now();
  std::vector<std::chrono::nanoseconds> at;
  auto mark = [&] { at.push_back(Clock::now() - start); };
  spindle::Interval every(10ms);
  for (int i = 0; i < 3; ++i) {
    REQUIRE(every.tick().has_value());
    mark();  // 0, 10, 20 ms: the first tick is at once
  }
  spindle::Semaphore none(0);
  CHECK_FALSE(none.acquire_for(3s).value());
  mark();  // + 3 s
  spindle::Mutex mutex;
  spindle::CondVar cv;
  {
    std::unique_lock lock(mutex);
    CHECK_FALSE(cv.wait_for(lock, 2s).value());
  }
  mark();  // + 2 s
  Channel<int> ch(0);
  auto scoped = tf::with_timeout(1s, [&] { return ch.recv(); });
  REQUIRE_FALSE(scoped.has_value());
  CHECK(scoped.error() == errc::timed_out);
  mark();  // + 1 s
  spindle::RecvCase from(ch);
  spindle::TimerCase timer = spindle::TimerCase::after(500ms);
  CHECK(spindle::select(from, timer).value() == 1);
  mark();  // + 0.5 s
  spindle::WaitGroup group;
  for (int i : {4, 7, 5}) {
    group.add();
    spindle::spawn([&group, i] {
      REQUIRE(tf::sleep_for(std::chrono::milliseconds(i)).has_value());
      group.done();
    }).detach();
  }
  REQUIRE(group.wait().has_value());
  mark();  // + 7 ms
  return at;
}

TEST_CASE("sim: every timed primitive keeps virtual time", "[sim]") {
  using std::chrono::nanoseconds;
  const std::vector<nanoseconds> expected = {0ms,    10ms,   20ms,   3020ms,
                                             5020ms, 6020ms, 6520ms, 6527ms};
  std::uint64_t digest = 0;
  for (std::uint64_t seed : {1, 2, 1}) {
    sim::Runtime rt(sim::Config{.seed = seed});
    CHECK(rt.run(timed_primitives) == expected);
    if (seed == 1 && digest != 0) CHECK(rt.digest() == digest);
    if (seed == 1) digest = rt.digest();
  }
}

TEST_CASE("sim: ten thousand sleepers each wake at their own virtual time", "[sim]") {
  constexpr int kFibers = 10'000;
  auto program = [] {
    const Deadline start = Clock::now();
    std::vector<spindle::JoinHandle<bool>> sleepers;
    sleepers.reserve(kFibers);
    for (int i = 0; i < kFibers; ++i) {
      const auto nap = std::chrono::milliseconds(i * 7'919 % 1'000);
      sleepers.push_back(spindle::spawn([start, nap] {
        return tf::sleep_for(nap).has_value() && Clock::now() >= start + nap &&
               Clock::now() < start + nap + 1ms;
      }));
    }
    int on_time = 0;
    for (auto& s : sleepers) on_time += s.join().value() ? 1 : 0;
    return on_time;
  };
  sim::Runtime first(sim::Config{.seed = 99});
  REQUIRE(first.run(program) == kFibers);
  sim::Runtime second(sim::Config{.seed = 99});
  REQUIRE(second.run(program) == kFibers);
  CHECK(second.digest() == first.digest());
  CHECK(first.steps() >= 2 * kFibers);
  CHECK(first.elapsed() >= 999ms);
}

TEST_CASE("sim: a run where every fiber blocks for good fails as a deadlock", "[sim]") {
  const std::string what = failure_of([] {
    Channel<int> never(0);
    auto waiter = spindle::spawn("waiter", [&] { (void)never.recv(); });
    (void)never.recv();
    (void)waiter.join();
  });
  CHECK_THAT(what, Catch::Contains("deadlock"));
  CHECK_THAT(what, Catch::Contains("seed 7"));
  // What each fiber waits for.
  CHECK_THAT(what, Catch::Contains("'waiter'"));
  CHECK_THAT(what, Catch::Contains("channel recv"));
}

TEST_CASE("sim: what would run on another thread is refused", "[sim]") {
  CHECK_THAT(failure_of([] { (void)spindle::spawn_blocking([] { return 1; }).join(); }),
             Catch::Contains("spawn_blocking is refused in a simulation"));
  CHECK_THAT(failure_of([] { (void)spindle::spawn_dedicated([] { return 1; }).join(); }),
             Catch::Contains("spawn_dedicated is refused in a simulation"));
  CHECK_THAT(failure_of([] {
               // A fiber parked meanwhile: the refusal must not wake it from
               // the plain thread.
               Channel<int> ch(0);
               auto parked = spindle::spawn([&] { (void)ch.recv(); });
               (void)tf::yield();
               auto handle = spindle::current_runtime();
               std::thread plain([&] { (void)handle.spawn([] {}); });
               plain.join();
               ch.close();
               (void)parked.join();
             }),
             Catch::Contains("a spawn from a thread outside the simulation is refused"));
}

TEST_CASE("sim: a dump from a fiber lists the simulation's fibers", "[sim]") {
  sim::Runtime rt(sim::Config{.seed = 13});
  const std::string text = rt.run([] {
    Channel<int> never(0);
    auto waiter = spindle::spawn("waiter", [&] { (void)never.recv(); });
    (void)tf::yield();
    std::string listing = spindle::current_runtime().dump();
    never.close();
    REQUIRE(waiter.join().has_value());
    return listing;
  });
  CHECK_THAT(text, Catch::Contains("'waiter'"));
  CHECK_THAT(text, Catch::Contains("channel recv"));
}

TEST_CASE("sim: I/O is refused with errc::unsupported", "[sim]") {
  sim::Runtime rt(sim::Config{.seed = 11});
  rt.run([] {
    CHECK(spindle::current_runtime().io_backend() == "sim");
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    std::array<std::byte, 8> buf{};
    auto r = spindle::io::read(fds[0], buf, spindle::io::kStreamOffset);
    ::close(fds[0]);
    ::close(fds[1]);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == errc::unsupported);
  });
}

TEST_CASE("sim: invalid runtime settings are refused by name", "[sim]") {
  spindle::Config bad;
  bad.stack_size = 1;
  CHECK_THROWS_WITH(sim::Runtime(sim::Config{.seed = 1, .runtime = bad}),
                    Catch::Contains("stack_size"));
}
