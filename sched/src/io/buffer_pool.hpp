// BufferPool: one worker's receive pool: kCount buffers of kSize bytes in
// one mapping (a page costs memory only once a receive wrote to it), from
// which the worker's backend lends pieces to io::PooledBuffer as bytes
// arrive, and to which the pieces come back from any thread.
//
// A buffer is free here, held by the kernel (the io_uring backend's
// BufferRing, which fills it piece by piece: incremental consumption), or
// neither, with pieces still lent; it is free again once the kernel is done
// with it and its last piece is back. Pieces given back on another thread
// reach the owner through a lock-free stack.
//
// Thread-safety: give_back() (PooledBuffer::reset) on any thread; every other
// member on the owner's thread only. Lifetime: counted references, one the
// owner's (dropped by close()) and one per lent piece; the last frees the
// pool, so a piece may outlive its worker and runtime.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "spindle/sched/pooled_buffer.hpp"

namespace spindle::detail {

class WorkerRemote;

class BufferPool {
 public:
  static constexpr std::uint32_t kCount = 64;
  static constexpr std::size_t kSize = io::kPooledBufferSize;

  // Drops the owner's reference: close().
  struct Close {
    void operator()(BufferPool* pool) const noexcept { pool->close(); }
  };
  using Handle = std::unique_ptr<BufferPool, Close>;

  // Every buffer free. `owner`: the worker whose thread uses it. Throws
  // std::system_error if the mapping fails.
  static Handle create(const WorkerRemote& owner);

  std::byte* buffer(std::uint32_t id) const noexcept { return slab_ + id * kSize; }

  // A free buffer (after collecting those that came back elsewhere), or
  // false when none is.
  bool take(std::uint32_t& id) noexcept;
  // Whether take() may find one: a cheap test for the backend's service.
  bool may_have_free() const noexcept {
    return free_count_ != 0 || returned_.load(std::memory_order_relaxed) != 0;
  }
  // `id`, taken and not lent from, free again.
  void put(std::uint32_t id) noexcept;
  // Hands `n` bytes at `offset` of buffer `id` to `out`, which must be empty.
  void lend(io::PooledBuffer& out, std::uint32_t id, std::size_t offset, std::size_t n) noexcept;

  // Buffer `id`, taken, goes to the kernel, which fills it from its start.
  void hand_to_kernel(std::uint32_t id) noexcept;
  // The kernel put `n` more bytes into buffer `id` (one completion, in the
  // order the kernel filled it): lends them to `out` if it is not null;
  // `done`: the kernel will not use the buffer again.
  void filled(std::uint32_t id, std::size_t n, io::PooledBuffer* out, bool done) noexcept;

  // The owner's end (Handle's): once every lent piece is back, the pool is
  // freed.
  void close() noexcept;

  // Any thread: a lent piece comes back.
  void give_back(std::uint32_t id) noexcept;

  // A buffer of kSize of `out`'s own (not from a pool; `out` must be
  // empty), for a receive when every pool buffer is out; size() 0 until
  // set_size(). Throws std::bad_alloc.
  static std::byte* allocate(io::PooledBuffer& out);
  static void set_size(io::PooledBuffer& out, std::size_t n) noexcept { out.size_ = n; }

 private:
  // holds_ of a buffer the kernel has: above any count of lent pieces.
  static constexpr std::uint32_t kKernel = 1u << 31;

  BufferPool(const WorkerRemote& owner, std::byte* slab) noexcept;
  ~BufferPool();
  void unref() noexcept;
  // Drops one hold of buffer `id`; the last makes it free (here, or
  // through returned_ from another thread).
  void release(std::uint32_t id, std::uint32_t hold) noexcept;
  // Moves the buffers that came back on other threads to the free ones.
  void collect() noexcept;

  const WorkerRemote& owner_;
  std::byte* const slab_;
  std::uint32_t free_[kCount];
  std::uint32_t free_count_ = 0;
  // Per buffer: its lent pieces, plus kKernel while the kernel has it.
  std::atomic<std::uint32_t> holds_[kCount] = {};
  // Per buffer the kernel has: the bytes it filled so far (owner only).
  std::uint32_t filled_[kCount] = {};
  // Buffers made free on other threads: a stack of ids + 1 (0: empty)
  // linked through next_, pushed by any thread, taken whole by the owner.
  std::atomic<std::uint32_t> returned_{0};
  std::uint32_t next_[kCount];
  std::atomic<std::uint64_t> refs_{1};
  std::atomic<bool> closed_{false};
};

}  // namespace spindle::detail
