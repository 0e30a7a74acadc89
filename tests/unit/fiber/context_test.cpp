// Context: switching between a thread and fibers, exit and stack reuse,
// deep stacks, migration between threads.

#include "spindle/fiber/context.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "skip.hpp"
#include "spindle/fiber/stack.hpp"

namespace spindle::fiber {
namespace {

constexpr std::size_t kStackSize = 256 * 1024;

void* to_data(std::intptr_t v) { return reinterpret_cast<void*>(v); }
std::intptr_t from_data(void* p) { return reinterpret_cast<std::intptr_t>(p); }

// A real system call: unlike pthread_self() it cannot be folded across a switch
// that moved the fiber to another thread.
long current_tid() { return ::syscall(SYS_gettid); }

struct PingPong {
  Context* thread = nullptr;
  Context* fiber = nullptr;
  void* arg_seen = nullptr;
  std::vector<std::intptr_t> received;
};

void ping_pong_entry(void* arg) {
  auto* s = static_cast<PingPong*>(arg);
  s->arg_seen = arg;
  // Replies 10*k to the k-th message; the first switch's data is not delivered.
  void* in = switch_context(*s->fiber, *s->thread, to_data(0));
  for (std::intptr_t k = 1; k <= 5; ++k) {
    s->received.push_back(from_data(in));
    in = switch_context(*s->fiber, *s->thread, to_data(10 * k));
  }
  s->received.push_back(from_data(in));
  exit_to(*s->fiber, *s->thread, to_data(-1));
}

TEST_CASE("fiber: switch_context passes data both ways in order") {
  StackPool pool(kStackSize);
  const Stack stack = pool.allocate();
  {
    PingPong s;
    Context thread;
    Context fiber(stack, &ping_pong_entry, &s);
    s.thread = &thread;
    s.fiber = &fiber;

    std::vector<std::intptr_t> replies;
    replies.push_back(from_data(switch_context(thread, fiber, to_data(100))));
    for (std::intptr_t k = 1; k <= 6; ++k) {
      replies.push_back(from_data(switch_context(thread, fiber, to_data(k))));
    }
    CHECK(s.arg_seen == &s);
    CHECK(replies == std::vector<std::intptr_t>{0, 10, 20, 30, 40, 50, -1});
    CHECK(s.received == std::vector<std::intptr_t>{1, 2, 3, 4, 5, 6});
  }
  pool.deallocate(stack);
}

struct Worker {
  int id = 0;
  int rounds = 0;
  Context* thread = nullptr;
  std::unique_ptr<Context> context;
  std::vector<std::intptr_t> seen;
};

void worker_entry(void* arg) {
  auto* w = static_cast<Worker*>(arg);
  for (int r = 0; r < w->rounds; ++r) {
    // Every yield reports (id, round); the scheduler answers with the round.
    void* in = switch_context(*w->context, *w->thread, to_data(w->id * 1000 + r));
    w->seen.push_back(from_data(in));
  }
  exit_to(*w->context, *w->thread, to_data(-w->id));
}

TEST_CASE("fiber: many fibers interleave on one thread") {
  constexpr int kFibers = 16;
  constexpr int kRounds = 200;
  StackPool pool(64 * 1024);
  Context thread;
  std::vector<Worker> workers(kFibers);
  std::vector<Stack> stacks;
  for (int i = 0; i < kFibers; ++i) {
    Worker& w = workers[static_cast<std::size_t>(i)];
    w.id = i + 1;
    w.rounds = kRounds;
    w.thread = &thread;
    stacks.push_back(pool.allocate());
    w.context = std::make_unique<Context>(stacks.back(), &worker_entry, &w);
  }
  // Round-robin: the first resume starts each fiber, which yields round 0.
  bool in_order = true;
  for (int r = 0; r <= kRounds; ++r) {
    for (Worker& w : workers) {
      const std::intptr_t got = from_data(switch_context(thread, *w.context, to_data(r)));
      const std::intptr_t want = r < kRounds ? w.id * 1000 + r : -w.id;
      in_order = in_order && got == want;
    }
  }
  CHECK(in_order);
  for (const Worker& w : workers) {
    REQUIRE(w.seen.size() == kRounds);
    for (int r = 0; r < kRounds; ++r) REQUIRE(w.seen[static_cast<std::size_t>(r)] == r + 1);
  }
  workers.clear();
  for (const Stack& s : stacks) pool.deallocate(s);
  CHECK(pool.in_use() == 0);
}

struct OneShot {
  Context* thread = nullptr;
  Context* fiber = nullptr;
  std::intptr_t value = 0;
  std::uintptr_t stack_mark = 0;
};

void one_shot_entry(void* arg) {
  auto* s = static_cast<OneShot*>(arg);
  s->stack_mark = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
  exit_to(*s->fiber, *s->thread, to_data(s->value * 2));
}

TEST_CASE("fiber: exit_to ends a fiber and its stack hosts the next one") {
  StackPool pool(kStackSize);
  Context thread;
  const Stack first = pool.allocate();
  void* last_base = first.base;
  pool.deallocate(first);
  bool same_stack = true;
  bool all_ran = true;
  bool on_stack = true;
  for (std::intptr_t i = 1; i <= 256; ++i) {
    const Stack stack = pool.allocate();
    same_stack = same_stack && stack.base == last_base;
    {
      OneShot s;
      s.value = i;
      Context fiber(stack, &one_shot_entry, &s);
      s.thread = &thread;
      s.fiber = &fiber;
      all_ran = all_ran && from_data(switch_context(thread, fiber, nullptr)) == 2 * i;
      on_stack = on_stack && s.stack_mark >= reinterpret_cast<std::uintptr_t>(stack.limit) &&
                 s.stack_mark < reinterpret_cast<std::uintptr_t>(stack.base);
    }
    pool.deallocate(stack);
  }
  CHECK(same_stack);
  CHECK(all_ran);
  CHECK(on_stack);
  CHECK(pool.in_use() == 0);
}

// Each frame keeps a 1 KiB array alive across a non-tail call. Not ASan-
// instrumented, so the array is on the real stack even when ASan moves frames
// to its fake stack (detect_stack_use_after_return).
[[gnu::noinline, gnu::no_sanitize_address]] std::uint64_t recurse(int depth,
                                                                  std::uintptr_t* deepest) {
  volatile char frame[1024];
  frame[0] = static_cast<char>(depth);
  frame[sizeof frame - 1] = static_cast<char>(depth);
  if (depth == 0) {
    *deepest = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0)) - sizeof frame;
    return 1;
  }
  const std::uint64_t below = recurse(depth - 1, deepest);
  asm volatile("" ::"r"(frame) : "memory");  // frame stays live: no tail-call rewrite
  return below + static_cast<unsigned char>(frame[0]) + static_cast<unsigned char>(frame[1023]);
}

struct Deep {
  Context* thread = nullptr;
  Context* fiber = nullptr;
  int depth = 0;
  std::uint64_t result = 0;
  std::uintptr_t top = 0;
  std::uintptr_t deepest = 0;
};

void deep_entry(void* arg) {
  auto* d = static_cast<Deep*>(arg);
  d->top = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
  d->result = recurse(d->depth, &d->deepest);
  exit_to(*d->fiber, *d->thread, nullptr);
}

TEST_CASE("fiber: deep recursion uses most of a fiber's stack") {
  constexpr std::size_t kDeepStack = 1024 * 1024;
  StackPool pool(kDeepStack);
  const Stack stack = pool.allocate();
  {
    Context thread;
    Deep d;
    d.depth = 600;  // >= 600 KiB of frames, about 1 MiB with sanitizer redzones
    Context fiber(stack, &deep_entry, &d);
    d.thread = &thread;
    d.fiber = &fiber;
    switch_context(thread, fiber, nullptr);
    std::uint64_t want = 1;
    for (int i = 1; i <= d.depth; ++i) want += 2 * static_cast<unsigned char>(static_cast<char>(i));
    CHECK(d.result == want);
    CHECK(d.top - d.deepest >= 600 * 1024);
    CHECK(d.deepest >= reinterpret_cast<std::uintptr_t>(stack.limit));
  }
  pool.deallocate(stack);
}

struct Migrant {
  Context* fiber = nullptr;
  Context* first = nullptr;
  std::vector<long> tids;
};

void migrant_entry(void* arg) {
  auto* m = static_cast<Migrant*>(arg);
  // Each resumer passes its own Context so the fiber knows whom to yield to.
  Context* resumer = m->first;
  for (int i = 0; i < 3; ++i) {
    m->tids.push_back(current_tid());
    resumer = static_cast<Context*>(switch_context(*m->fiber, *resumer, nullptr));
  }
  m->tids.push_back(current_tid());
  exit_to(*m->fiber, *resumer, nullptr);
}

TEST_CASE("fiber: a fiber started on one thread resumes on another") {
  StackPool pool(kStackSize);
  const Stack stack = pool.allocate();
  Migrant m;
  // turn: whose move it is; odd for the helper thread, even for this one.
  // release after each switch back; pairs with the acquire in wait_for().
  std::atomic<int> turn{0};
  auto wait_for = [&turn](int t) {
    while (turn.load(std::memory_order_acquire) != t) std::this_thread::yield();
  };
  {
    Context fiber(stack, &migrant_entry, &m);
    m.fiber = &fiber;
    std::thread helper([&] {
      Context here;
      wait_for(1);
      switch_context(here, fiber, &here);
      turn.store(2, std::memory_order_release);
      wait_for(3);
      switch_context(here, fiber, &here);  // the fiber exits back to us
      turn.store(4, std::memory_order_release);
    });
    Context here;
    m.first = &here;
    switch_context(here, fiber, &here);
    turn.store(1, std::memory_order_release);
    wait_for(2);
    switch_context(here, fiber, &here);
    turn.store(3, std::memory_order_release);
    wait_for(4);
    helper.join();
  }
  REQUIRE(m.tids.size() == 4);
  const long self = current_tid();
  CHECK(m.tids[0] == self);
  CHECK(m.tids[1] != self);
  CHECK(m.tids[2] == self);
  CHECK(m.tids[3] == m.tids[1]);
  pool.deallocate(stack);
}

}  // namespace
}  // namespace spindle::fiber

namespace spindle::fiber {
namespace {

struct Parked {
  Context* thread = nullptr;
  Context* fiber = nullptr;
  std::intptr_t resumed_with = 0;
};

// The frame a backtrace of the suspended fiber must include.
[[gnu::noinline]] std::intptr_t park_in_marker(Parked& p) {
  void* in = switch_context(*p.fiber, *p.thread, nullptr);
  asm volatile("" ::: "memory");  // keep the call from becoming a tail call
  return from_data(in) + 1;
}

void parked_entry(void* arg) {
  auto* p = static_cast<Parked*>(arg);
  p->resumed_with = park_in_marker(*p);
  exit_to(*p->fiber, *p->thread, nullptr);
}

bool has_frame_in(const std::vector<void*>& frames, const void* fn, std::uintptr_t size) {
  const auto start = reinterpret_cast<std::uintptr_t>(fn);
  for (void* f : frames) {
    const auto a = reinterpret_cast<std::uintptr_t>(f);
    if (a > start && a <= start + size) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("fiber: backtrace_of a suspended context walks its frames and leaves it resumable") {
  std::vector<void*> probe(4);
  Parked p;
  StackPool pool(kStackSize);
  const Stack stack = pool.allocate();
  {
    Context thread;
    Context fiber(stack, &parked_entry, &p);
    p.thread = &thread;
    p.fiber = &fiber;
    switch_context(thread, fiber, nullptr);  // runs until it parks in the marker

    if (backtrace_of(fiber, probe.data(), probe.size()) == 0) {
      switch_context(thread, fiber, to_data(41));
      CHECK(p.resumed_with == 42);
      pool.deallocate(stack);
      SPINDLE_SKIP("backtrace_of is not supported in this build (sanitizer or architecture)");
    }
    // Captured twice without running in between: the same frames both times.
    std::vector<void*> first(64), second(64);
    first.resize(backtrace_of(fiber, first.data(), first.size()));
    second.resize(backtrace_of(fiber, second.data(), second.size()));
    REQUIRE(first.size() >= 2);
    CHECK(first == second);
    // The marker's return address into parked_entry, within its first bytes.
    CHECK(has_frame_in(first, reinterpret_cast<const void*>(&parked_entry), 256));
    CHECK(has_frame_in(first, reinterpret_cast<const void*>(&park_in_marker), 256));

    switch_context(thread, fiber, to_data(41));
    CHECK(p.resumed_with == 42);
  }
  pool.deallocate(stack);
}

}  // namespace spindle::fiber
