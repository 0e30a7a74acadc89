// BlockingPool: the bounded pool of plain threads that runs spawn_blocking
// callables, and the I/O calls a backend cannot make without blocking.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "spindle/base/thread_mutex.hpp"
#include "spindle/sched/detail/core.hpp"

namespace spindle::detail {

// A blocking call a backend hands the pool (epoll: a file operation). run()
// runs once, on a pool thread, and hands the result back itself.
class PoolJob {
 public:
  virtual void run() noexcept = 0;

 protected:
  ~PoolJob() = default;
};

// Thread-safe. Threads are started on demand up to `max_threads`; a thread
// idle for 10 s exits. close() refuses new tasks, completes queued ones as
// aborted without running them, and joins every thread after its running
// task (which cannot be interrupted) returns.
class BlockingPool {
 public:
  // `on_exception` decides what an escaping exception does (the runtime's
  // catch_exceptions policy); it runs on the pool thread.
  BlockingPool(std::size_t max_threads, std::function<void(BlockingTask*)> on_exception);
  ~BlockingPool();

  // Takes the caller's reference on `task`. Returns false if closed.
  bool submit(BlockingTask* task);
  // Runs `job` before the tasks queued. Returns false if closed.
  bool submit(PoolJob* job);
  // Takes `job` back if no thread has started it: true then, and it never
  // runs. O(jobs queued).
  bool withdraw(PoolJob* job);
  void close();

 private:
  void worker_main();
  // Queues the task or the job and finds it a thread.
  bool enqueue(BlockingTask* task, PoolJob* job);

  const std::size_t max_threads_;
  std::function<void(BlockingTask*)> on_exception_;
  ThreadMutex mutex_;
  std::condition_variable cv_;
  std::deque<BlockingTask*> queue_ SPINDLE_GUARDED_BY(mutex_);
  std::deque<PoolJob*> jobs_ SPINDLE_GUARDED_BY(mutex_);
  std::vector<std::thread> threads_ SPINDLE_GUARDED_BY(mutex_);
  // Threads that left; joined lazily.
  std::vector<std::thread::id> exited_ SPINDLE_GUARDED_BY(mutex_);
  std::size_t idle_ SPINDLE_GUARDED_BY(mutex_) = 0;
  bool open_ SPINDLE_GUARDED_BY(mutex_) = true;
};

}  // namespace spindle::detail
