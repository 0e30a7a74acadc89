// RuntimeHandle::dump(): every live fiber with its state and wait reason,
// indented by the supervision tree, with backtraces of suspended fibers; from
// a fiber or a plain thread; and a fiber that does not suspend.
//
// Assertions run on the root fiber only.
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <span>
#include <string>
#include <thread>

#include "runtime_harness.hpp"

using namespace std::chrono_literals;
using spindle::Channel;
using spindle::Event;
using spindle::Mutex;
namespace tf = spindle::this_fiber;
using spindle::test::eventually;

namespace {

#if defined(SPINDLE_ASAN) || defined(SPINDLE_TSAN)
constexpr bool kBacktraces = false;  // backtrace_of is off in sanitizer builds
#else
constexpr bool kBacktraces = true;
#endif

// A frame every backtrace of the channel receiver must show.
[[gnu::noinline]] int receive_in_dump_marker(Channel<int>& ch) {
  auto v = ch.recv();
  asm volatile("" ::: "memory");
  return v ? *v : -1;
}

// The line for fiber `name`, or "" (the dump's lines are "... '<name>': <state>...").
std::string line_of(const std::string& dump, const std::string& name) {
  const auto at = dump.find("'" + name + "'");
  if (at == std::string::npos) return {};
  const auto begin = dump.rfind('\n', at);
  const auto end = dump.find('\n', at);
  return dump.substr(begin == std::string::npos ? 0 : begin + 1,
                     end == std::string::npos ? std::string::npos : end - begin - 1);
}

// The text from fiber `name`'s line up to the next fiber line.
std::string entry_of(const std::string& dump, const std::string& name) {
  const auto at = dump.find("'" + name + "'");
  if (at == std::string::npos) return {};
  const auto next = dump.find("fiber ", dump.find('\n', at));
  return dump.substr(at, next == std::string::npos ? std::string::npos : next - at);
}

}  // namespace

TEST_CASE("dump: lists parked fibers with what they wait for and leaves them working") {
  spindle::test::run(
      [] {
        Channel<int> ch;
        Event ev;
        int pipe_fds[2];
        REQUIRE(::pipe(pipe_fds) == 0);
        auto receiver = spindle::spawn("receiver", [&] { return receive_in_dump_marker(ch); });
        auto waiter = spindle::spawn("waiter", [&] { return ev.wait().has_value(); });
        auto reader = spindle::spawn("reader", [&] {
          char c = 0;
          auto r = spindle::io::read(pipe_fds[0], std::as_writable_bytes(std::span(&c, 1)),
                                     spindle::io::kStreamOffset);
          return r && *r == 1 ? c : '?';
        });
        auto parent = spindle::spawn("parent", [&] {
          auto child = spindle::spawn("child", [&] { (void)tf::sleep_for(1h); });
          (void)child.join();
        });
        std::string dump;
        REQUIRE(eventually([&] {
          dump = spindle::current_runtime().dump();
          return line_of(dump, "receiver").find("parked (channel recv)") != std::string::npos &&
                 line_of(dump, "waiter").find("parked (event)") != std::string::npos &&
                 line_of(dump, "reader").find("parked (io read)") != std::string::npos &&
                 line_of(dump, "child").find("parked (sleep)") != std::string::npos &&
                 line_of(dump, "parent").find("parked (join)") != std::string::npos;
        }));
        INFO(dump);
        CHECK(line_of(dump, "root").find("running (this dump)") != std::string::npos);
        CHECK(dump.find("live tasks (") == std::string::npos);  // every worker held
        // Children are indented under their parent.
        const std::string parent_line = line_of(dump, "parent");
        const std::string child_line = line_of(dump, "child");
        CHECK(child_line.find_first_not_of(' ') == parent_line.find_first_not_of(' ') + 2);
        CHECK(parent_line.find("age ") != std::string::npos);
        if (kBacktraces) {
          CHECK(entry_of(dump, "receiver").find("receive_in_dump_marker") != std::string::npos);
          CHECK(entry_of(dump, "receiver").find("#0 ") != std::string::npos);
        }
        // Dumped again without running in between: the same listing.
        const std::string again = spindle::current_runtime().dump();
        const auto frames_of = [](const std::string& entry) {
          return entry.substr(entry.find('\n'));
        };
        CHECK(frames_of(entry_of(again, "receiver")) == frames_of(entry_of(dump, "receiver")));

        // The dumped fibers carry on normally.
        REQUIRE(ch.send(7));
        ev.set();
        REQUIRE(::write(pipe_fds[1], "x", 1) == 1);
        CHECK(receiver.join().value() == 7);
        CHECK(waiter.join().value());
        CHECK(reader.join().value() == 'x');
        parent.abort();
        CHECK(!parent.join());
        ::close(pipe_fds[0]);
        ::close(pipe_fds[1]);
      },
      spindle::Config{.workers = 2});
}

TEST_CASE("dump: from a plain thread and of a fiber not yet started") {
  spindle::test::run(
      [] {
        // One worker and no suspension yet: the new fiber has not started.
        auto later = spindle::spawn("later", [] { return 1; });
        const std::string from_fiber = spindle::current_runtime().dump();
        INFO(from_fiber);
        CHECK(line_of(from_fiber, "later").find("pending (not started)") != std::string::npos);
        CHECK(later.join().value() == 1);

        Event ev;
        auto parked = spindle::spawn("parked", [&] { (void)ev.wait(); });
        REQUIRE(eventually([&] {
          return line_of(spindle::current_runtime().dump(), "parked").find("parked (event)") !=
                 std::string::npos;
        }));
        auto handle = spindle::current_runtime();
        const std::string from_thread =
            spindle::spawn_blocking([handle] { return handle.dump(); }).join().value();
        INFO(from_thread);
        CHECK(line_of(from_thread, "parked").find("parked (event)") != std::string::npos);
        CHECK(line_of(from_thread, "root").find("parked (join)") != std::string::npos);
        ev.set();
        CHECK(parked.join());
      },
      spindle::Config{.workers = 1});
}

TEST_CASE("dump: a fiber that does not suspend leaves the listing without stacks") {
  spindle::test::run(
      [] {
        std::atomic<bool> spinning{false};
        std::atomic<bool> stop{false};
        std::string dump;
        // The busy fiber may starve the root's worker: a plain thread dumps.
        std::thread dumper([&, handle = spindle::current_runtime()] {
          while (!spinning) std::this_thread::sleep_for(1ms);
          dump = handle.dump();
          stop = true;
        });
        auto busy = spindle::spawn("busy", [&] {
          spinning = true;
          // Blocks its worker thread without ever suspending the fiber.
          while (!stop) ::usleep(1000);
        });
        CHECK(busy.join());
        dumper.join();
        INFO(dump);
        CHECK(dump.find("states are approximate") != std::string::npos);
        CHECK(line_of(dump, "busy").find("running or ready") != std::string::npos);
        CHECK(dump.find("#0 ") == std::string::npos);
      },
      spindle::Config{.workers = 2});
}

TEST_CASE("dump: Runtime::dump from another thread while run runs and empty after") {
  spindle::Runtime rt(spindle::Config{.workers = 2, .stall_threshold = 0ms});
  CHECK(rt.dump().empty());
  Event release;
  std::string seen;
  std::thread watcher([&] {
    const auto limit = spindle::Clock::now() + 10s;
    while (spindle::Clock::now() < limit) {
      seen = rt.dump();
      if (line_of(seen, "root").find("parked (event)") != std::string::npos) break;
      std::this_thread::sleep_for(1ms);
    }
    release.set();
  });
  rt.run([&] { CHECK(release.wait()); });
  watcher.join();
  INFO(seen);
  CHECK(line_of(seen, "root").find("parked (event)") != std::string::npos);
  CHECK(rt.dump().empty());
}

TEST_CASE("dump: a fiber that asks for a dump leaves its worker to the others meanwhile") {
  spindle::test::run(
      [] {
        Event ev;
        auto parked = spindle::spawn("parked", [&] { (void)ev.wait(); });
        std::atomic<bool> stop{false};
        std::atomic<std::uint64_t> ticks{0};
        auto ticker = spindle::spawn("ticker", [&] {
          while (!stop.load()) {
            ++ticks;
            if (!spindle::this_fiber::yield()) return;
          }
        });
        REQUIRE(spindle::this_fiber::yield());  // both have run once
        // One worker: the ticker runs during the dump only if this fiber parks.
        const std::uint64_t before = ticks.load();
        const std::string dump = spindle::current_runtime().dump();
        const std::uint64_t during = ticks.load() - before;
        INFO(dump);
        CHECK(line_of(dump, "root").find("running (this dump)") != std::string::npos);
        CHECK(line_of(dump, "parked").find("parked (event)") != std::string::npos);
        CHECK(during > 0);
        stop = true;
        ev.set();
        CHECK(parked.join());
        CHECK(ticker.join());
      },
      spindle::Config{.workers = 1});
}
