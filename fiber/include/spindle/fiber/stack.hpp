// Fiber stacks: slab-carved, lazily committed, guarded, pooled.
// Nothing here suspends. StackPool takes a ThreadMutex for a few instructions
// per call (plus an mmap and a madvise or mprotect when it carves new stacks);
// StackCache takes no lock.
#pragma once

#include <cstddef>
#include <vector>

#include "spindle/base/thread_mutex.hpp"

namespace spindle::fiber {

// One fiber stack. The usable range is [limit, base); the stack grows down from
// `base`. A guard region sits directly below `limit`. Plain value; the pool that
// made it owns the memory.
struct Stack {
  void* base = nullptr;
  void* limit = nullptr;

  std::size_t size() const noexcept {
    return static_cast<std::size_t>(static_cast<char*>(base) - static_cast<char*>(limit));
  }
  explicit operator bool() const noexcept { return base != nullptr; }
};

// How guard pages are made. kMadvise (MADV_GUARD_INSTALL, Linux 6.13+) costs no
// extra mapping; kMprotect splits the slab mapping, two mappings per stack,
// which counts against vm.max_map_count.
enum class GuardMode { kMadvise, kMprotect };

// Thread-safe. Hands out stacks carved from large anonymous mappings
// (MAP_NORESERVE: memory is committed only when a fiber touches it), each with a
// one-page guard below it. Freed stacks are kept on a shared free list and
// reused; slabs are unmapped only when the pool is destroyed.
class StackPool {
 public:
  // `stack_size` is the usable size, rounded up to the page size; it must be at
  // least 16 KiB and at most 1 GiB (std::invalid_argument naming "stack_size").
  explicit StackPool(std::size_t stack_size);
  ~StackPool();
  StackPool(const StackPool&) = delete;
  StackPool& operator=(const StackPool&) = delete;

  // Throws std::system_error when the kernel refuses a mapping; the message
  // names vm.max_map_count when that is the likely cause.
  Stack allocate();
  void deallocate(Stack stack) noexcept;

  std::size_t stack_size() const noexcept { return stack_size_; }
  GuardMode guard_mode() const noexcept { return guard_mode_; }
  // Stacks currently handed out (allocated and not yet deallocated).
  std::size_t in_use() const noexcept;

 private:
  void grow() SPINDLE_REQUIRES(mutex_);  // maps a new slab
  // Guards up to kCarveBatch fresh strides into out[]; returns how many (at
  // least one, or throws).
  std::size_t carve(Stack* out) SPINDLE_REQUIRES(mutex_);

  std::size_t stack_size_;  // usable bytes per stack
  std::size_t stride_;      // guard + stack
  std::size_t per_slab_;    // stacks per slab
  GuardMode guard_mode_;
  mutable detail::ThreadMutex mutex_;
  std::vector<Stack> free_ SPINDLE_GUARDED_BY(mutex_);
  std::vector<void*> slabs_ SPINDLE_GUARDED_BY(mutex_);
  // The next uncarved index in slabs_.back().
  std::size_t slab_next_ SPINDLE_GUARDED_BY(mutex_) = 0;
  std::size_t in_use_ SPINDLE_GUARDED_BY(mutex_) = 0;
};

// Worker-affine (not thread-safe). A bounded LIFO cache in front of a StackPool,
// so a worker reuses its own warm stacks without taking the pool's lock. When
// full, frees go to the pool; when empty, allocations come from it.
class StackCache {
 public:
  StackCache(StackPool& pool, std::size_t capacity);
  ~StackCache();  // returns every cached stack to the pool
  StackCache(const StackCache&) = delete;
  StackCache& operator=(const StackCache&) = delete;

  Stack allocate();
  void deallocate(Stack stack) noexcept;
  std::size_t cached() const noexcept { return cache_.size(); }

 private:
  StackPool& pool_;
  std::size_t capacity_;
  std::vector<Stack> cache_;
};

}  // namespace spindle::fiber
