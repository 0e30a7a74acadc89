#include "core/blocking_pool.hpp"

#include <algorithm>
#include <chrono>

#include "core/abandon.hpp"
#include "core/metrics.hpp"

namespace spindle::detail {
namespace {
constexpr auto kKeepAlive = std::chrono::seconds(10);
}

BlockingPool::BlockingPool(std::size_t max_threads, std::function<void(BlockingTask*)> on_exception)
    : max_threads_(max_threads), on_exception_(std::move(on_exception)) {}

BlockingPool::~BlockingPool() { close(); }

bool BlockingPool::enqueue(BlockingTask* task, PoolJob* job) {
  ThreadLock lock(mutex_);
  if (!open_) return false;
  if (task) queue_.push_back(task);
  if (job) jobs_.push_back(job);
  if (idle_ > 0) {
    cv_.notify_one();
    return true;
  }
  // Join threads that left after idling, then grow if below the bound.
  for (auto id : exited_) {
    auto it = std::find_if(threads_.begin(), threads_.end(),
                           [id](const std::thread& t) { return t.get_id() == id; });
    if (it != threads_.end()) {
      it->join();
      threads_.erase(it);
    }
  }
  exited_.clear();
  if (threads_.size() < max_threads_) threads_.emplace_back([this] { worker_main(); });
  return true;
}

bool BlockingPool::submit(BlockingTask* task) { return enqueue(task, nullptr); }

bool BlockingPool::submit(PoolJob* job) { return enqueue(nullptr, job); }

bool BlockingPool::withdraw(PoolJob* job) {
  ThreadLock lock(mutex_);
  const auto it = std::find(jobs_.begin(), jobs_.end(), job);
  if (it == jobs_.end()) return false;
  jobs_.erase(it);
  return true;
}

void BlockingPool::close() {
  std::deque<BlockingTask*> dropped;
  std::vector<std::thread> threads;
  {
    ThreadLock lock(mutex_);
    open_ = false;
    dropped.swap(queue_);
    cv_.notify_all();
  }
  for (BlockingTask* t : dropped) abandon_unrun(*t, t->record ? t->record->shared_slot : 0);
  {
    ThreadLock lock(mutex_);
    threads.swap(threads_);
  }
  for (auto& t : threads) t.join();
}

void BlockingPool::worker_main() {
  ThreadLock lock(mutex_);
  for (;;) {
    if (!jobs_.empty()) {
      PoolJob* job = jobs_.front();
      jobs_.pop_front();
      lock.unlock();
      job->run();
      lock.lock();
      continue;
    }
    if (queue_.empty()) {
      if (!open_) return;
      ++idle_;
      const bool woke = lock.wait_for(cv_, kKeepAlive, [this]() SPINDLE_REQUIRES(mutex_) {
        return !queue_.empty() || !jobs_.empty() || !open_;
      });
      --idle_;
      if (!woke) {
        exited_.push_back(std::this_thread::get_id());
        return;
      }
      continue;
    }
    BlockingTask* task = queue_.front();
    queue_.pop_front();
    lock.unlock();
    Task::Outcome outcome = Task::Outcome::kValue;
    std::exception_ptr error;
    if (task->aborted()) {
      task->discard();
      outcome = Task::Outcome::kAborted;
    } else {
      try {
        task->run();
        if (task->aborted()) outcome = Task::Outcome::kAborted;
      } catch (...) {
        error = std::current_exception();
        outcome = Task::Outcome::kException;
      }
    }
    task->abort_tree();
    task->detach();
    // Before complete(): a joiner that scrapes sees the task no longer running.
    if (TaskRecord* r = task->record) count_task_finish(r, r->shared_slot);
    task->complete(outcome, error);
    if (outcome == Task::Outcome::kException) on_exception_(task);
    task->unref();
    lock.lock();
  }
}

}  // namespace spindle::detail
