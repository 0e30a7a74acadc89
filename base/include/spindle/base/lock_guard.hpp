// LockGuard: std::lock_guard in a form clang's thread-safety analysis follows.
#pragma once

#include "spindle/base/thread_annotations.hpp"

namespace spindle {

// Holds `lock` from construction to the end of the scope. For any lockable
// annotated as a capability (the spinlocks, ThreadMutex): the analysis then
// knows the data guarded by it may be touched in the scope, which it cannot
// see through std::lock_guard (the standard library carries no annotations).
template <class Lock>
class SPINDLE_SCOPED_CAPABILITY LockGuard {
 public:
  explicit LockGuard(Lock& lock) SPINDLE_ACQUIRE(lock) : lock_(lock) { lock_.lock(); }
  ~LockGuard() SPINDLE_RELEASE() { lock_.unlock(); }
  LockGuard(const LockGuard&) = delete;
  LockGuard& operator=(const LockGuard&) = delete;

 private:
  Lock& lock_;
};

}  // namespace spindle
