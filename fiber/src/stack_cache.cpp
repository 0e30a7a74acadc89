// StackCache: a worker's bounded LIFO of warm stacks in front of the shared
// StackPool. The most recently freed stack is the next one handed out, so its
// top pages are likely still in cache and already committed.

#include "spindle/fiber/stack.hpp"

namespace spindle::fiber {

StackCache::StackCache(StackPool& pool, std::size_t capacity) : pool_(pool), capacity_(capacity) {
  // Invariant: cache_.capacity() >= capacity_, so deallocate() never allocates.
  cache_.reserve(capacity_);
}

StackCache::~StackCache() {
  for (const Stack& stack : cache_) pool_.deallocate(stack);
}

Stack StackCache::allocate() {
  if (cache_.empty()) return pool_.allocate();
  const Stack stack = cache_.back();
  cache_.pop_back();
  return stack;
}

void StackCache::deallocate(Stack stack) noexcept {
  if (!stack) return;
  if (cache_.size() < capacity_) {
    cache_.push_back(stack);
  } else {
    pool_.deallocate(stack);
  }
}

}  // namespace spindle::fiber
