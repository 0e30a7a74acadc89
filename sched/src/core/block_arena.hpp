// The process-wide source of fresh fiber control blocks. It carves them from
// large anonymous mappings advised for transparent huge pages, so a burst of
// spawns faults in a 2 MiB page per few thousand blocks instead of a 4 KiB
// page per ten. Memory is never returned to the kernel: freed blocks are
// recycled through BlockCache and BlockDepot (block_cache.hpp), and the
// footprint stays at its peak, as a Go runtime keeps its goroutine structs.
#pragma once

#include <cstddef>

#include "spindle/base/thread_mutex.hpp"

namespace spindle::detail {

// Thread-safe. Trivially destructible, so a process-wide instance outlives
// every fiber, including those freed during static destruction.
class BlockArena {
 public:
  // Bytes mapped at a time: two huge pages.
  static constexpr std::size_t kChunk = std::size_t{4} << 20;
  // The largest carve(): a chunk ends where the next carve would not fit.
  static constexpr std::size_t kMaxCarve = std::size_t{64} << 10;

  constexpr BlockArena() = default;

  // `bytes` (a multiple of 16, at most kMaxCarve) of fresh memory, 16-byte
  // aligned and zero-filled; throws std::bad_alloc when the kernel refuses a
  // mapping.
  void* carve(std::size_t bytes);

 private:
  ThreadMutex mutex_;
  char* next_ SPINDLE_GUARDED_BY(mutex_) = nullptr;
  char* end_ SPINDLE_GUARDED_BY(mutex_) = nullptr;
};

// The arena fiber control blocks come from.
BlockArena& block_arena() noexcept;

}  // namespace spindle::detail
