// Fiber control blocks (Fiber::operator new/delete), recycled. A spawn-heavy
// program allocates a control block on one worker and frees it on another,
// so blocks are sorted into 16-byte size classes up to kMaxBlock; each worker
// keeps a few of each class, and the workers trade whole batches through the
// process-wide depot, so a worker that frees what another allocates passes
// them back in bulk. Fresh blocks come from the BlockArena in batches; no
// block ever goes back to the heap. Larger blocks and sanitizer builds (where
// reuse would hide a use after free) use the global allocator.
#pragma once

#include <array>
#include <cstddef>

#include "spindle/base/thread_mutex.hpp"

namespace spindle::detail {

inline constexpr std::size_t kBlockGrain = 16;  // also the smallest block
inline constexpr std::size_t kBlockClasses = 64;
inline constexpr std::size_t kMaxBlock = kBlockGrain * kBlockClasses;
inline constexpr std::size_t kBlockBatch = 32;  // blocks traded at a time

// The size class of a block of `size` bytes (size <= kMaxBlock), and the
// bytes every block of that class has.
constexpr std::size_t block_class(std::size_t size) noexcept {
  return (size + kBlockGrain - 1) / kBlockGrain - 1;
}
constexpr std::size_t class_bytes(std::size_t c) noexcept { return (c + 1) * kBlockGrain; }

// A block given to the depot holds its batch's list while it is there, so it
// has at least this many bytes (every fiber control block does).
inline constexpr std::size_t kMinTradedBlock = kBlockBatch * sizeof(void*);

// Thread-safe. Free blocks per class (of at least kMinTradedBlock bytes), as
// full batches plus one partial batch of blocks given back singly. The first
// block of a batch lists the others and links the next batch, so taking a
// batch reads one block, not a chain of them. It owns the blocks it holds and
// never frees them; trivially destructible, so the process-wide one
// (block_depot()) outlives every fiber.
class BlockDepot {
 public:
  constexpr BlockDepot() = default;

  // Takes the kBlockBatch blocks at `blocks`, of class `c`.
  void put(std::size_t c, void* const* blocks) noexcept;
  // Takes one block of class `c`.
  void put_one(std::size_t c, void* block) noexcept;
  // Moves a full batch of class `c` to out[0..kBlockBatch); false if there is
  // none.
  bool take(std::size_t c, void** out) noexcept;
  // One block of class `c`; nullptr if there is none.
  void* take_one(std::size_t c) noexcept;

 private:
  // Overlays the first block of a batch.
  struct Batch {
    Batch* next;
    void* others[kBlockBatch - 1];
  };
  static_assert(sizeof(Batch) <= kMinTradedBlock);
  struct alignas(64) Class {
    ThreadMutex mutex;
    Batch* full SPINDLE_GUARDED_BY(mutex) = nullptr;
    Batch* partial SPINDLE_GUARDED_BY(mutex) = nullptr;
    // Blocks in `partial`, itself included: 0 exactly when it is null, and
    // less than kBlockBatch.
    std::size_t partial_count SPINDLE_GUARDED_BY(mutex) = 0;
  };
  std::array<Class, kBlockClasses> classes_{};
};

// The depot every worker trades with, and off-worker frees return to.
BlockDepot& block_depot() noexcept;

// One worker's free blocks: not thread-safe. Gives what it holds back to its
// depot when destroyed.
class BlockCache {
 public:
  explicit BlockCache(BlockDepot& depot) noexcept : depot_(depot) {}
  ~BlockCache();
  BlockCache(const BlockCache&) = delete;
  BlockCache& operator=(const BlockCache&) = delete;

  // A block of class_bytes(c); throws std::bad_alloc.
  void* allocate(std::size_t c);
  // Takes back a block of class `c`.
  void deallocate(std::size_t c, void* block) noexcept;

 private:
  // Invariant: count <= 2 * kBlockBatch.
  struct Class {
    std::array<void*, 2 * kBlockBatch> blocks;
    std::size_t count = 0;
  };
  BlockDepot& depot_;
  std::array<Class, kBlockClasses> classes_{};
};

}  // namespace spindle::detail
