#include "global_queue.hpp"

#include <algorithm>

namespace spindle::detail {

void GlobalQueue::push_chain(Fiber* head, Fiber* tail, std::size_t n) noexcept {
  tail->next = nullptr;
  std::lock_guard lock(mutex_);
  if (tail_) {
    tail_->next = head;
  } else {
    head_ = head;
  }
  tail_ = tail;
  len_.store(len_.load(std::memory_order_relaxed) + n, std::memory_order_release);
}

Fiber* GlobalQueue::take(std::size_t max, std::size_t& n) noexcept {
  n = 0;
  if (max == 0 || empty()) return nullptr;
  std::lock_guard lock(mutex_);
  Fiber* head = head_;
  Fiber* last = nullptr;
  Fiber* cur = head_;
  while (cur && n < max) {
    last = cur;
    cur = cur->next;
    ++n;
  }
  if (n == 0) return nullptr;
  head_ = cur;
  if (!cur) tail_ = nullptr;
  last->next = nullptr;
  len_.store(len_.load(std::memory_order_relaxed) - n, std::memory_order_release);
  return head;
}

std::size_t GlobalQueue::share(std::size_t len, std::size_t workers) noexcept {
  return std::min({len / workers + 1, std::size_t{128}, len});
}

}  // namespace spindle::detail
