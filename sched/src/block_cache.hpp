// Fiber control blocks (Fiber::operator new/delete), recycled per worker. A
// spawn-heavy program allocates a control block on one worker and frees it
// on another; glibc then takes the allocating thread's arena lock on every
// cross-thread free, and two busy workers contend on it. Blocks are sorted
// into 16-byte size classes up to kMaxBlock; each worker keeps a few of each
// class, and the workers trade whole batches through the scheduler's depot,
// so a worker that frees what another allocates passes them back in bulk.
// Larger blocks, blocks off the workers, and sanitizer builds (where reuse
// would hide a use after free) use the global allocator.
#pragma once

#include <array>
#include <cstddef>
#include <mutex>
#include <vector>

namespace spindle::detail {

// malloc's own granularity, so a block costs no more memory than new's.
inline constexpr std::size_t kBlockGrain = 16;
inline constexpr std::size_t kBlockClasses = 64;
inline constexpr std::size_t kMaxBlock = kBlockGrain * kBlockClasses;
inline constexpr std::size_t kBlockBatch = 32;  // blocks traded at a time

// The size class of a block of `size` bytes (size <= kMaxBlock), and the
// bytes every block of that class has.
constexpr std::size_t block_class(std::size_t size) noexcept {
  return (size + kBlockGrain - 1) / kBlockGrain - 1;
}
constexpr std::size_t class_bytes(std::size_t c) noexcept { return (c + 1) * kBlockGrain; }

// Thread-safe. Full batches of free blocks, per class, at most kMaxBatches
// each; owns the blocks it holds.
class BlockDepot {
 public:
  static constexpr std::size_t kMaxBatches = 64;
  using Batch = std::array<void*, kBlockBatch>;

  BlockDepot() = default;
  ~BlockDepot();
  BlockDepot(const BlockDepot&) = delete;
  BlockDepot& operator=(const BlockDepot&) = delete;

  // Takes the batch at `blocks` of class `c`. False (taking nothing) if the
  // class is full or no memory is left for the batch.
  bool put(std::size_t c, void* const* blocks) noexcept;
  // Moves a batch of class `c` to out[0..kBlockBatch); false if there is none.
  bool take(std::size_t c, void** out) noexcept;

 private:
  struct Class {
    std::mutex mutex;
    std::vector<Batch> batches;  // guarded by mutex
  };
  std::array<Class, kBlockClasses> classes_;
};

// One worker's free blocks: not thread-safe. Owns the blocks it holds.
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
