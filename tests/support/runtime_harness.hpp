// Helpers for tests that run fibers (and thread-safe Catch2 assertions, which
// fibers on several workers need): run a body on several worker counts and
// check that nothing leaked (file descriptors here; stacks and in-flight
// operations are checked by the runtime's own shutdown assertions, and fiber
// control blocks by LeakSanitizer in the asan build).
#pragma once

#include <dirent.h>

#include <chrono>
#include <cstddef>
#include <initializer_list>
#include <spindle/spindle.hpp>
#include <thread>
#include <utility>
#include <vector>

#include "thread_safe_catch.hpp"

namespace spindle::test {

inline std::size_t open_fd_count() {
  std::size_t n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (::readdir(d)) ++n;
    ::closedir(d);
  }
  return n;
}

// The stall detector is off in runtimes made by these helpers: a test that
// blocks a worker on purpose should not print stall reports.

// Runs `body` as the root fiber on each worker count. `body` must be
// copyable (it runs once per count).
template <class F>
void on_workers(F body, std::initializer_list<std::size_t> counts = {1, 2, 4}, Config base = {}) {
  for (std::size_t workers : counts) {
    INFO("workers = " << workers);
    const std::size_t fds = open_fd_count();
    {
      Config c = base;
      c.workers = workers;
      c.stall_threshold = std::chrono::milliseconds(0);
      Runtime rt(c);
      rt.run(body);
    }
    CHECK(open_fd_count() == fds);
  }
}

// Long enough for a fiber that should stay blocked to misbehave if it were
// going to; only ever used to give a bug a chance, never to wait for success.
inline constexpr auto kSettle = std::chrono::milliseconds(20);

// Polls `pred` from a fiber; false after 10 s (a hang guard, not a timing check).
template <class P>
bool eventually(P pred) {
  const auto limit = Clock::now() + std::chrono::seconds(10);
  while (!pred()) {
    if (Clock::now() > limit) return false;
    (void)this_fiber::sleep_for(std::chrono::microseconds(100));
  }
  return true;
}

// Runs `body` once as the root fiber with `config` and returns its value.
template <class F>
auto run(F&& body, Config config = {}) {
  config.stall_threshold = std::chrono::milliseconds(0);
  Runtime rt(config);
  return rt.run(std::forward<F>(body));
}

// From a fiber: runs body(id) on `threads` plain threads (ids 0 to threads - 1)
// and `fibers` fibers (the ids after) at once, and returns when all have
// ended, checking that every fiber ended without an error. The root parks
// until the threads are done, so joining them does not block a worker.
template <class F>
void on_threads_and_fibers(int threads, int fibers, F body) {
  WaitGroup threads_done(threads);
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      body(t);
      threads_done.done();
    });
  }
  std::vector<JoinHandle<void>> hs;
  for (int f = 0; f < fibers; ++f) hs.push_back(spawn([&, id = threads + f] { body(id); }));
  for (auto& h : hs) CHECK(h.join().has_value());
  CHECK(threads_done.wait().has_value());
  for (auto& t : ts) t.join();
}

}  // namespace spindle::test
