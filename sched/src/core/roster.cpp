#include "core/roster.hpp"

#include <algorithm>

#include "core/worker_remote.hpp"

namespace spindle::detail {

void Roster::join(WorkerRemote* w) {
  ThreadLock lock(mutex_);
  workers_.push_back(w);
}

void Roster::leave(WorkerRemote* w) {
  ThreadLock lock(mutex_);
  workers_.erase(std::find(workers_.begin(), workers_.end(), w));
  cv_.notify_all();  // a pauser waits for every worker still listed
}

void Roster::hold(WorkerRemote* /*w*/) {
  ThreadLock lock(mutex_);
  if (!pausing_.load(std::memory_order_relaxed)) return;
  ++held_;
  cv_.notify_all();
  lock.wait(cv_, [this] { return !pausing_.load(std::memory_order_relaxed); });
  --held_;
}

bool Roster::pause(WorkerRemote* self, std::chrono::milliseconds timeout) {
  ThreadLock lock(mutex_);
  pausing_.store(true, std::memory_order_seq_cst);
  // Wake parked workers so they reach their check (after the flag is set: a
  // worker about to park re-checks it after clearing its parker).
  for (WorkerRemote* w : workers_) {
    if (w != self) w->unpark();
  }
  return lock.wait_for(cv_, timeout, [&]() SPINDLE_REQUIRES(mutex_) {
    const bool self_listed =
        self && std::find(workers_.begin(), workers_.end(), self) != workers_.end();
    return held_ + (self_listed ? 1 : 0) == workers_.size();
  });
}

void Roster::resume() {
  ThreadLock lock(mutex_);
  pausing_.store(false, std::memory_order_relaxed);
  cv_.notify_all();
}

}  // namespace spindle::detail
