#include "block_cache.hpp"

#include <new>

#include "spindle/sched/detail/fiber.hpp"
#include "worker.hpp"

namespace spindle::detail {
namespace {

#if defined(SPINDLE_ASAN) || defined(SPINDLE_TSAN)
constexpr bool kRecycle = false;
#else
constexpr bool kRecycle = true;
#endif

void free_blocks(void* const* blocks, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) ::operator delete(blocks[i]);
}

}  // namespace

BlockDepot::~BlockDepot() {
  for (Class& c : classes_) {
    for (const Batch& b : c.batches) free_blocks(b.data(), b.size());
  }
}

bool BlockDepot::put(std::size_t c, void* const* blocks) noexcept {
  Class& k = classes_[c];
  std::lock_guard lock(k.mutex);
  if (k.batches.size() == kMaxBatches) return false;
  try {
    Batch& b = k.batches.emplace_back();
    std::copy_n(blocks, kBlockBatch, b.begin());
  } catch (const std::bad_alloc&) {
    return false;
  }
  return true;
}

bool BlockDepot::take(std::size_t c, void** out) noexcept {
  Class& k = classes_[c];
  std::lock_guard lock(k.mutex);
  if (k.batches.empty()) return false;
  std::copy_n(k.batches.back().begin(), kBlockBatch, out);
  k.batches.pop_back();
  return true;
}

BlockCache::~BlockCache() {
  for (const Class& k : classes_) free_blocks(k.blocks.data(), k.count);
}

void* BlockCache::allocate(std::size_t c) {
  Class& k = classes_[c];
  if (k.count == 0) {
    if (!depot_.take(c, k.blocks.data())) return ::operator new(class_bytes(c));
    k.count = kBlockBatch;
  }
  return k.blocks[--k.count];
}

void BlockCache::deallocate(std::size_t c, void* block) noexcept {
  Class& k = classes_[c];
  if (k.count == k.blocks.size()) {
    // Full: the newer half goes to the depot, or back to the heap.
    void* const* half = k.blocks.data() + kBlockBatch;
    if (!depot_.put(c, half)) free_blocks(half, kBlockBatch);
    k.count = kBlockBatch;
  }
  k.blocks[k.count++] = block;
}

void* Fiber::operator new(std::size_t size) {
  if (size > kMaxBlock) return ::operator new(size);
  const std::size_t c = block_class(size);
  Worker* w = kRecycle ? current_worker() : nullptr;
  return w ? w->blocks().allocate(c) : ::operator new(class_bytes(c));
}

void Fiber::operator delete(void* block, std::size_t size) noexcept {
  Worker* w = kRecycle && size <= kMaxBlock ? current_worker() : nullptr;
  if (w) {
    w->blocks().deallocate(block_class(size), block);
  } else {
    ::operator delete(block);
  }
}

void* Fiber::operator new(std::size_t size, std::align_val_t align) {
  return ::operator new(size, align);
}

void Fiber::operator delete(void* block, std::size_t, std::align_val_t align) noexcept {
  ::operator delete(block, align);
}

}  // namespace spindle::detail
