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

#include "core/stall_probe.hpp"
#include "spindle/base/log.hpp"
#include "spindle/base/thread_mutex.hpp"

namespace spindle::detail {

class Scheduler;

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
