#include "core/global_queue.hpp"

#include <algorithm>

namespace spindle::detail {

void GlobalQueue::push(ReadyEntry* const* items, std::size_t n) noexcept {
  ThreadLock lock(mutex_);
  fibers_.insert(fibers_.end(), items, items + n);
  len_.store(fibers_.size(), std::memory_order_release);
}

std::size_t GlobalQueue::take(ReadyEntry** out, std::size_t max) noexcept {
  if (max == 0 || empty()) return 0;
  ThreadLock lock(mutex_);
  const std::size_t n = std::min(max, fibers_.size());
  std::copy_n(fibers_.begin(), n, out);
  fibers_.erase(fibers_.begin(), fibers_.begin() + static_cast<std::ptrdiff_t>(n));
  len_.store(fibers_.size(), std::memory_order_release);
  return n;
}

std::size_t GlobalQueue::share(std::size_t len, std::size_t workers) noexcept {
  return std::min({len / workers + 1, kMaxShare, len});
}

}  // namespace spindle::detail
