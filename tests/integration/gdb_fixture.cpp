// spindle-gdb-fixture: a runtime frozen in a known shape for scripts/gdb/spindle.py
// (gdb_test.cpp). On 2 workers it spawns fibers parked in different ways:
//   "recv"    on Channel<int>::recv, inside park_in_gdb_marker (never inlined)
//   "event"   on Event::wait, with a child "event-child" parked on the same event
//   "sleeper" on this_fiber::sleep_for(1h)
//   "reader"  on io::read of a pipe
// plus one spawn_blocking task. Once every fiber's dump line says "parked (",
// it prints "fiber <name> <id>" per fiber and "ready" on stdout, then raises
// SIGTRAP on the root fiber (a debugger stops there; without one the process
// dies). When continued, it wakes them all and exits 0.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <span>
#include <spindle/spindle.hpp>
#include <string>
#include <thread>

using namespace std::chrono_literals;

// The id of "recv", for gdb_test's `eval "spindle bt %d", spindle_gdb_recv_id`
// (plain memory: gdb reads it without calling into the process).
extern "C" {
volatile std::uint64_t spindle_gdb_recv_id = 0;
}

namespace {

std::atomic<std::uint64_t> event_id{0}, child_id{0}, sleeper_id{0};

// The frame the gdb test looks for in `spindle bt <id of recv>`.
[[gnu::noinline]] int park_in_gdb_marker(spindle::Channel<int>& ch) {
  const int v = ch.recv().value();
  asm volatile("" ::: "memory");  // keep the call out of the tail position
  return v + 1;
}

int count_parked(const std::string& dump) {
  int n = 0;
  for (std::size_t p = dump.find(": parked ("); p != std::string::npos;
       p = dump.find(": parked (", p + 1))
    ++n;
  return n;
}

}  // namespace

int main() {
  // No stall detector: its capture signal (SIGRTMIN+5) would stop gdb while the
  // first dump() symbolizes (slow the first time).
  spindle::Runtime runtime(spindle::Config{.workers = 2, .stall_threshold = {}});
  const int rc = runtime.run([] {
    spindle::Channel<int> ch;
    spindle::Event ev;
    std::atomic<bool> release_blocking{false};

    auto recv = spindle::spawn("recv", [&] {
      spindle_gdb_recv_id = spindle::this_fiber::id();
      return park_in_gdb_marker(ch);
    });
    auto event = spindle::spawn("event", [&] {
      event_id = spindle::this_fiber::id();
      auto child = spindle::spawn("event-child", [&] {
        child_id = spindle::this_fiber::id();
        ev.wait().value();
      });
      ev.wait().value();
      child.join().value();
    });
    auto sleeper = spindle::spawn("sleeper", [&] {
      sleeper_id = spindle::this_fiber::id();
      (void)spindle::this_fiber::sleep_for(1h);  // aborted when the root returns
    });
    int pipe_fds[2];
    if (::pipe(pipe_fds) != 0) return 1;
    auto reader = spindle::spawn("reader", [&] {
      char c = 0;
      auto r = spindle::io::read(pipe_fds[0], std::as_writable_bytes(std::span(&c, 1)),
                                 spindle::io::kStreamOffset);
      return r && *r == 1 && c == 'x';
    });
    auto blocking = spindle::spawn_blocking([&] {
      while (!release_blocking.load()) std::this_thread::sleep_for(1ms);
    });

    // Five fibers parked: recv, event, event-child, sleeper, reader.
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (count_parked(spindle::current_runtime().dump()) < 5) {
      if (std::chrono::steady_clock::now() > deadline) {
        std::fprintf(stderr, "fixture: fibers did not park:\n%s",
                     spindle::current_runtime().dump().c_str());
        return 1;
      }
      (void)spindle::this_fiber::sleep_for(1ms);
    }
    std::printf("fiber recv %llu\nfiber event %llu\nfiber event-child %llu\nfiber sleeper %llu\n",
                static_cast<unsigned long long>(spindle_gdb_recv_id),
                static_cast<unsigned long long>(event_id.load()),
                static_cast<unsigned long long>(child_id.load()),
                static_cast<unsigned long long>(sleeper_id.load()));
    std::printf("ready\n");
    std::fflush(stdout);

    ::raise(SIGTRAP);

    ch.send(41).value();
    ev.set();
    release_blocking = true;
    const bool wrote = ::write(pipe_fds[1], "x", 1) == 1;
    const bool ok = recv.join().value() == 42 && event.join().has_value() &&
                    blocking.join().has_value() && wrote && reader.join().value();
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    (void)sleeper;
    return ok ? 0 : 1;
  });
  std::printf("fixture: done (%d)\n", rc);
  return rc;
}
