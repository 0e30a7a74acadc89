// Overflow handler and alternate signal stacks. Every test that installs the
// handler does so in a fork()ed child: it is process-wide and permanent.

#include "spindle/fiber/overflow.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "child.hpp"
#include "spindle/fiber/context.hpp"
#include "spindle/fiber/stack.hpp"

namespace spindle::fiber {
namespace {

using Catch::Matchers::Contains;
using test::ChildResult;
using test::run_in_child;

const std::size_t kPage = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));

// The stack whose guard page describe_guard() claims. Set before the handler
// can run; read from the signal handler.
Stack g_guarded;

bool describe_guard(const void* addr, char* out, std::size_t cap) {
  const char* a = static_cast<const char*>(addr);
  const char* limit = static_cast<const char*>(g_guarded.limit);
  if (limit == nullptr || a < limit - kPage || a >= limit) return false;
  const char kName[] = "fiber 42 'runaway'";
  std::size_t n = 0;
  for (; n + 1 < cap && kName[n] != '\0'; ++n) out[n] = kName[n];
  out[n] = '\0';
  return true;
}

bool claim_nothing(const void*, char*, std::size_t) { return false; }

volatile bool g_keep_going = true;

// Unbounded unless g_keep_going is cleared: a 512-byte frame per call, used
// after the recursive call so it is neither a tail call nor optimized away.
// Not ASan-instrumented, so the frame stays on the fiber's real stack.
[[gnu::noinline, gnu::no_sanitize_address]] int runaway(int depth) {
  volatile char frame[512];
  frame[0] = static_cast<char>(depth);
  frame[511] = static_cast<char>(depth);
  const int below = g_keep_going ? runaway(depth + 1) : 0;
  return below + frame[0] + frame[511];
}

struct Runaway {
  Context* thread = nullptr;
  Context* fiber = nullptr;
};

void runaway_entry(void* arg) {
  auto* r = static_cast<Runaway*>(arg);
  const int sum = runaway(0);
  exit_to(*r->fiber, *r->thread, reinterpret_cast<void*>(static_cast<std::intptr_t>(sum)));
}

// Fault on a page nobody claims.
void fault_elsewhere() {
  void* p = ::mmap(nullptr, kPage, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) std::_Exit(98);
  static_cast<volatile char*>(p)[0] = 1;
}

void previous_handler(int, siginfo_t*, void*) {
  const char msg[] = "previous handler ran\n";
  (void)!::write(STDERR_FILENO, msg, sizeof msg - 1);
  ::_exit(42);
}

TEST_CASE("fiber: a guard page hit is reported as fiber stack overflow") {
  const ChildResult r = run_in_child([] {
    // Drop the alternate stack Catch2 (or ASan) set up, so ours is the one used.
    stack_t off = {};
    off.ss_flags = SS_DISABLE;
    ::sigaltstack(&off, nullptr);
    ensure_signal_stack();

    StackPool pool(64 * 1024);
    g_guarded = pool.allocate();
    install_overflow_handler(&claim_nothing);
    install_overflow_handler(&describe_guard);  // replaces the describer
    Context thread;
    Runaway state;
    Context fiber(g_guarded, &runaway_entry, &state);
    state.thread = &thread;
    state.fiber = &fiber;
    switch_context(thread, fiber, nullptr);
    return 3;  // the recursion ended without an overflow
  });
  INFO(r.describe());
  CHECK(r.killed_by(SIGABRT));
  CHECK_THAT(r.err, Contains("spindle: fiber stack overflow in fiber 42 'runaway' "
                             "(guard page hit at 0x"));
}

TEST_CASE("fiber: unclaimed faults go to the previous SIGSEGV handler") {
  const ChildResult r = run_in_child([] {
    struct sigaction sa = {};
    sa.sa_sigaction = &previous_handler;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGSEGV, &sa, nullptr);

    StackPool pool(64 * 1024);
    g_guarded = pool.allocate();
    install_overflow_handler(&describe_guard);
    fault_elsewhere();
    return 3;
  });
  INFO(r.describe());
  CHECK(r.exited_with(42));
  CHECK_THAT(r.err, Contains("previous handler ran"));
  CHECK_THAT(r.err, !Contains("fiber stack overflow"));
}

TEST_CASE("fiber: unclaimed faults without a previous handler take the default action") {
  const ChildResult r = run_in_child([] {
    StackPool pool(64 * 1024);
    g_guarded = pool.allocate();
    install_overflow_handler(&describe_guard);
    fault_elsewhere();
    return 3;
  });
  INFO(r.describe());
  CHECK(r.killed_by(SIGSEGV));
  CHECK_THAT(r.err, !Contains("fiber stack overflow"));
}

TEST_CASE("fiber: a SIGSEGV sent with kill is not taken for an overflow") {
  const ChildResult r = run_in_child([] {
    install_overflow_handler(+[](const void*, char* out, std::size_t) {
      out[0] = '\0';
      return true;  // would claim anything it were asked about
    });
    ::raise(SIGSEGV);
    return 3;
  });
  INFO(r.describe());
  CHECK(r.killed_by(SIGSEGV));
  CHECK_THAT(r.err, !Contains("fiber stack overflow"));
}

// Whether [addr, addr + len) lies in one readable mapping of this process.
bool readable(const void* addr, std::size_t len) {
  const auto lo = reinterpret_cast<std::uintptr_t>(addr);
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    const std::size_t dash = line.find('-');
    const std::size_t space = line.find(' ');
    const std::uintptr_t start = std::stoull(line.substr(0, dash), nullptr, 16);
    const std::uintptr_t end = std::stoull(line.substr(dash + 1, space - dash - 1), nullptr, 16);
    if (start <= lo && lo + len <= end) return line[space + 1] == 'r';
  }
  return false;
}

TEST_CASE("fiber: ensure_signal_stack gives a thread an alternate stack until it exits") {
  constexpr char kMarker[] = "spindle-altstack";
  stack_t before = {};
  stack_t after = {};
  stack_t again = {};
  std::thread t([&] {
    ::sigaltstack(nullptr, &before);
    ensure_signal_stack();
    ::sigaltstack(nullptr, &after);
    ensure_signal_stack();  // idempotent
    ::sigaltstack(nullptr, &again);
    if ((before.ss_flags & SS_DISABLE) != 0) std::memcpy(after.ss_sp, kMarker, sizeof kMarker);
  });
  t.join();
  CHECK((after.ss_flags & SS_DISABLE) == 0);
  CHECK(again.ss_sp == after.ss_sp);
  if ((before.ss_flags & SS_DISABLE) == 0) {
    CHECK(after.ss_sp == before.ss_sp);  // a sanitizer runtime's own stack is kept
  } else {
    CHECK(after.ss_size >= 64 * 1024);
    // Unmapped at thread exit. The range may have been mapped again since (by
    // the sanitizer runtime, say), but a fresh mapping is zero-filled: only a
    // leaked stack still holds the marker.
    if (readable(after.ss_sp, sizeof kMarker)) {
      CHECK(std::memcmp(after.ss_sp, kMarker, sizeof kMarker) != 0);
    }
  }
}

}  // namespace
}  // namespace spindle::fiber
