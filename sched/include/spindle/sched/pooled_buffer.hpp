// io::PooledBuffer: the bytes of a pooled receive (io::recv_pooled,
// StreamSocket::read_pooled), in a buffer the I/O backend took from its
// worker's receive pool only when they arrived. A connection that waits for
// its next request this way holds no buffer while it waits.
// Move-only; one buffer is used by one thread at a time, and may be released
// on any thread, during or after the runtime's life.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace spindle {
namespace detail {
class BufferPool;
}  // namespace detail

namespace io {

// The size of a receive pool's buffers: the most one pooled receive returns.
inline constexpr std::size_t kPooledBufferSize = 16 * 1024;

class PooledBuffer {
 public:
  // Empty (what a pooled receive returns at end of stream).
  PooledBuffer() noexcept = default;
  // A buffer of its own, not from a pool, holding a copy of `bytes` (at
  // most kPooledBufferSize of them). Throws std::bad_alloc.
  static PooledBuffer copy_of(std::span<const std::byte> bytes);
  PooledBuffer(PooledBuffer&& o) noexcept;
  PooledBuffer& operator=(PooledBuffer&& o) noexcept;
  PooledBuffer(const PooledBuffer&) = delete;
  PooledBuffer& operator=(const PooledBuffer&) = delete;
  ~PooledBuffer() { reset(); }

  const std::byte* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  std::span<const std::byte> bytes() const noexcept { return {data_, size_}; }
  std::string_view view() const noexcept { return {reinterpret_cast<const char*>(data_), size_}; }
  // Whether the bytes are in a pool's buffer (else in one of their own).
  bool from_pool() const noexcept { return pool_ != nullptr; }

  // Gives the buffer back now (to its pool, or to the heap); empty after.
  void reset() noexcept;

 private:
  friend class detail::BufferPool;

  std::byte* data_ = nullptr;
  std::size_t size_ = 0;
  detail::BufferPool* pool_ = nullptr;  // null: data_ is new[]'d (or null)
  std::uint32_t id_ = 0;                // the buffer's index in pool_
};

}  // namespace io
}  // namespace spindle
