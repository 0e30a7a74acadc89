// StallDetector: a watchdog thread that notices a worker stuck in one fiber
// (a busy loop or a blocking system call that starves the worker's other
// fibers) and reports the fiber's name and backtrace, once per stall.
#pragma once

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include "spindle/base/log.hpp"
#include "spindle/base/thread_mutex.hpp"

namespace spindle::detail {

class Scheduler;

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

class StallDetector {
 public:
  // Starts the watchdog, which logs each report to `sink` (a warning).
  // `threshold` is positive.
  StallDetector(Scheduler& scheduler, std::chrono::milliseconds threshold, LogSink sink);
  ~StallDetector();  // stops and joins the watchdog
  StallDetector(const StallDetector&) = delete;
  StallDetector& operator=(const StallDetector&) = delete;

 private:
  void run();

  Scheduler& scheduler_;
  const std::chrono::milliseconds threshold_;
  const LogSink sink_;
  ThreadMutex mutex_;
  std::condition_variable cv_;
  bool stop_ SPINDLE_GUARDED_BY(mutex_) = false;
  std::thread thread_;
};

}  // namespace spindle::detail
