// StallProbe: a worker's turn counter and the stack capture of a stall, read
// by the stall detector (stall_detector.hpp) and the idle watch.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace spindle::detail {

// Per worker. `turns` is written only by the worker: odd while it runs a
// fiber, so a value that stays odd is a fiber that has not suspended. The
// capture fields are written by the worker's signal handler (on the worker
// thread, inside the stuck fiber) between the watchdog's `request` and the
// handler's `done` store; the watchdog reads them after seeing `done`.
struct StallProbe {
  std::atomic<std::uint64_t> turns{0};
  pthread_t thread = ::pthread_self();    // the worker's thread (the probe is made on it)
  std::atomic<std::uint64_t> request{0};  // the stalled `turns` value to capture
  std::atomic<std::uint64_t> done{0};     // the request the capture answers
  std::uint64_t fiber_id = 0;             // 0: the fiber had suspended by then
  char fiber_name[64] = {};
  static constexpr std::size_t kMaxFrames = 48;
  void* frames[kMaxFrames] = {};
  std::size_t frame_count = 0;

  void begin_turn() noexcept {
    turns.store(turns.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  }
  void end_turn() noexcept { begin_turn(); }
};

}  // namespace spindle::detail
