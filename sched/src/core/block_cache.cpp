#include "core/block_cache.hpp"

#include <algorithm>
#include <new>
#include <type_traits>
#include <utility>

#include "core/block_arena.hpp"
#include "core/current.hpp"
#include "core/worker.hpp"
#include "spindle/base/assert.hpp"
#include "spindle/sched/detail/fiber.hpp"

namespace spindle::detail {
namespace {

#if defined(SPINDLE_ASAN) || defined(SPINDLE_TSAN)
constexpr bool kRecycle = false;
#else
constexpr bool kRecycle = true;
#endif

constinit BlockDepot depot;
static_assert(std::is_trivially_destructible_v<BlockDepot>);
static_assert(sizeof(Fiber) >= kMinTradedBlock);

}  // namespace

BlockDepot& block_depot() noexcept { return depot; }

void BlockDepot::put(std::size_t c, void* const* blocks) noexcept {
  SPINDLE_DCHECK(class_bytes(c) >= kMinTradedBlock);
  auto* batch = static_cast<Batch*>(blocks[0]);
  std::copy_n(blocks + 1, kBlockBatch - 1, batch->others);
  Class& k = classes_[c];
  ThreadLock lock(k.mutex);
  batch->next = k.full;
  k.full = batch;
}

void BlockDepot::put_one(std::size_t c, void* block) noexcept {
  SPINDLE_DCHECK(class_bytes(c) >= kMinTradedBlock);
  Class& k = classes_[c];
  ThreadLock lock(k.mutex);
  if (!k.partial) {
    k.partial = static_cast<Batch*>(block);
    k.partial_count = 1;
    return;
  }
  k.partial->others[k.partial_count - 1] = block;
  if (++k.partial_count == kBlockBatch) {
    k.partial->next = k.full;
    k.full = std::exchange(k.partial, nullptr);
    k.partial_count = 0;
  }
}

bool BlockDepot::take(std::size_t c, void** out) noexcept {
  Class& k = classes_[c];
  Batch* batch;
  {
    ThreadLock lock(k.mutex);
    batch = k.full;
    if (!batch) return false;
    k.full = batch->next;
  }
  out[0] = batch;
  std::copy_n(batch->others, kBlockBatch - 1, out + 1);
  return true;
}

void* BlockDepot::take_one(std::size_t c) noexcept {
  Class& k = classes_[c];
  ThreadLock lock(k.mutex);
  if (!k.partial) {
    if (!k.full) return nullptr;
    // A full batch becomes the partial one.
    k.partial = std::exchange(k.full, k.full->next);
    k.partial_count = kBlockBatch;
  }
  if (--k.partial_count == 0) return std::exchange(k.partial, nullptr);
  return k.partial->others[k.partial_count - 1];
}

BlockCache::~BlockCache() {
  for (std::size_t c = 0; c < kBlockClasses; ++c) {
    const Class& k = classes_[c];
    std::size_t i = 0;
    for (; i + kBlockBatch <= k.count; i += kBlockBatch) depot_.put(c, k.blocks.data() + i);
    for (; i < k.count; ++i) depot_.put_one(c, k.blocks[i]);
  }
}

void* BlockCache::allocate(std::size_t c) {
  Class& k = classes_[c];
  if (k.count == 0) {
    if (!depot_.take(c, k.blocks.data())) {
      const std::size_t bytes = class_bytes(c);
      auto* fresh = static_cast<char*>(block_arena().carve(kBlockBatch * bytes));
      // Handed out from the front of the carve, so first touches go in
      // address order.
      for (std::size_t i = 0; i < kBlockBatch; ++i) {
        k.blocks[i] = fresh + (kBlockBatch - 1 - i) * bytes;
      }
    }
    k.count = kBlockBatch;
  }
  void* block = k.blocks[--k.count];
  if (k.count > 0) {
    // The next block may have been freed on another worker, its lines still
    // in that core's cache: start moving them here while this one is filled
    // in.
    auto* next = static_cast<const char*>(k.blocks[k.count - 1]);
    for (std::size_t off = 0; off < class_bytes(c); off += 64) __builtin_prefetch(next + off, 1);
  }
  return block;
}

void BlockCache::deallocate(std::size_t c, void* block) noexcept {
  Class& k = classes_[c];
  if (k.count == k.blocks.size()) {
    depot_.put(c, k.blocks.data() + kBlockBatch);  // the newer half
    k.count = kBlockBatch;
  }
  k.blocks[k.count++] = block;
}

void* Fiber::operator new(std::size_t size) {
  if (!kRecycle || size > kMaxBlock) return ::operator new(size);
  const std::size_t c = block_class(size);
  if (Worker* w = current_worker()) return w->blocks().allocate(c);
  void* block = depot.take_one(c);
  return block ? block : block_arena().carve(class_bytes(c));
}

void Fiber::operator delete(void* block, std::size_t size) noexcept {
  if (!kRecycle || size > kMaxBlock) {
    ::operator delete(block);
    return;
  }
  if (Worker* w = current_worker()) {
    w->blocks().deallocate(block_class(size), block);
  } else {
    depot.put_one(block_class(size), block);
  }
}

void* Fiber::operator new(std::size_t size, std::align_val_t align) {
  return ::operator new(size, align);
}

void Fiber::operator delete(void* block, std::size_t, std::align_val_t align) noexcept {
  ::operator delete(block, align);
}

}  // namespace spindle::detail
