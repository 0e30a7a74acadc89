// Roster: the workers whose loops are running, and a way to hold all of them
// between fibers (for a dump that must read parked fibers' stacks while no
// worker can resume them).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <vector>

#include "spindle/base/thread_mutex.hpp"

namespace spindle::detail {

class WorkerRemote;

// Thread-safe. A worker joins before its loop and leaves after it; between
// fibers it calls hold_if_requested(), which blocks it while a pause is on.
class Roster {
 public:
  void join(WorkerRemote* w);
  void leave(WorkerRemote* w);

  // The worker loop's check, between fibers: a relaxed load unless a pause is on.
  void hold_if_requested(WorkerRemote* w) {
    if (pausing_.load(std::memory_order_relaxed)) hold(w);
  }
  bool pause_requested() const noexcept { return pausing_.load(std::memory_order_relaxed); }

  // Asks every worker to hold and waits up to `timeout` until all but `self`
  // (the calling worker, or null) do. Returns true if they all did: until
  // resume(), no fiber runs but the caller's. Otherwise workers that have not
  // held yet may still be running fibers. Either way, call resume() after.
  // One pause at a time (callers serialize).
  bool pause(WorkerRemote* self, std::chrono::milliseconds timeout);
  void resume();

  // Calls fn(WorkerRemote*) for every worker in the roster, under its lock.
  template <class Fn>
  void for_each(Fn&& fn) {
    ThreadLock lock(mutex_);
    for (WorkerRemote* w : workers_) fn(w);
  }

 private:
  void hold(WorkerRemote* w);

  std::atomic<bool> pausing_{false};  // written under mutex_
  ThreadMutex mutex_;
  std::condition_variable cv_;
  std::vector<WorkerRemote*> workers_ SPINDLE_GUARDED_BY(mutex_);
  std::size_t held_ SPINDLE_GUARDED_BY(mutex_) = 0;
};

}  // namespace spindle::detail
