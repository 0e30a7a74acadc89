// ThreadMutex and ThreadLock: std::mutex and std::unique_lock for plain
// threads, in a form clang's thread-safety analysis follows.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "spindle/base/thread_annotations.hpp"

namespace spindle::detail {

// Thread-safe. A std::mutex that is a capability, so data can be declared
// SPINDLE_GUARDED_BY it (libstdc++'s std::mutex carries no annotations). It
// blocks the thread: for the runtime's own threads and for critical sections
// of a few instructions on a worker. A fiber that may wait long takes
// spindle::Mutex instead.
class SPINDLE_CAPABILITY("mutex") ThreadMutex {
 public:
  void lock() SPINDLE_ACQUIRE() { mutex_.lock(); }
  bool try_lock() SPINDLE_TRY_ACQUIRE(true) { return mutex_.try_lock(); }
  void unlock() SPINDLE_RELEASE() { mutex_.unlock(); }

 private:
  friend class ThreadLock;
  std::mutex mutex_;
};

// Holds a ThreadMutex from construction to the end of the scope, like
// std::unique_lock: it may be unlocked and locked again in between, and waits
// on a condition variable with the mutex released while it sleeps. A wait's
// predicate runs with the mutex held; a lambda says so with
// SPINDLE_REQUIRES(the mutex), which the analysis then checks in its body.
class SPINDLE_SCOPED_CAPABILITY ThreadLock {
 public:
  explicit ThreadLock(ThreadMutex& m) SPINDLE_ACQUIRE(m) : lock_(m.mutex_) {}
  ~ThreadLock() SPINDLE_RELEASE() = default;
  ThreadLock(const ThreadLock&) = delete;
  ThreadLock& operator=(const ThreadLock&) = delete;

  void lock() SPINDLE_ACQUIRE() { lock_.lock(); }
  void unlock() SPINDLE_RELEASE() { lock_.unlock(); }

  // Returns once pred() holds.
  template <class Pred>
  void wait(std::condition_variable& cv, Pred pred) {
    cv.wait(lock_, std::move(pred));
  }
  // pred()'s final value: false only if `timeout` passed with it false.
  template <class Rep, class Period, class Pred>
  bool wait_for(std::condition_variable& cv, const std::chrono::duration<Rep, Period>& timeout,
                Pred pred) {
    return cv.wait_for(lock_, timeout, std::move(pred));
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace spindle::detail
