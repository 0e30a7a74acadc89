// GuardedCell<T>: one value shared between its owner and readers on other threads.
#pragma once

#include <utility>

#include "spindle/base/thread_annotations.hpp"
#include "spindle/base/thread_mutex.hpp"

namespace spindle::detail {

// Thread-safe: store() and load() may race. A copy starts empty (T{}): the
// value belongs to the object that holds the cell, not to its copies.
// A mutex rather than std::atomic<std::shared_ptr>: libstdc++ 12's lock bit
// inside the pointer is invisible to TSan.
template <class T>
class GuardedCell {
 public:
  GuardedCell() = default;
  GuardedCell(const GuardedCell&) noexcept {}
  GuardedCell& operator=(const GuardedCell&) noexcept { return *this; }

  void store(T value) noexcept {
    ThreadLock lock(mutex_);
    value_ = std::move(value);
  }
  T load() const noexcept {
    ThreadLock lock(mutex_);
    return value_;
  }

 private:
  mutable ThreadMutex mutex_;
  T value_ SPINDLE_GUARDED_BY(mutex_){};
};

}  // namespace spindle::detail
