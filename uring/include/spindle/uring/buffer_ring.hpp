// BufferRing: a provided-buffer ring (IORING_REGISTER_PBUF_RING) of one
// Ring, consumed incrementally (IOU_PBUF_RING_INC, Linux 6.12): a receive
// with IOSQE_BUFFER_SELECT takes buffer space only when its bytes arrive, so
// an operation that waits holds no memory, and takes only as much as it
// received: the next receive continues in the same buffer.
// Affine to its Ring's thread. Nothing here blocks or suspends.
#pragma once

#include <liburing.h>

#include <cstddef>
#include <cstdint>

namespace spindle::uring {

class Ring;

class BufferRing {
 public:
  // IORING_CQE_F_BUF_MORE and IOU_PBUF_RING_INC, which liburing 2.3's
  // headers lack.
  static constexpr std::uint32_t kBufMore = 1u << 4;
  static constexpr unsigned kIncremental = 2;

  // A ring of `entries` slots (a power of two, at most 32768) registered
  // in `ring` as buffer group `group`, empty. Throws std::system_error if
  // the memory cannot be mapped or the kernel refuses the registration (a
  // kernel without incremental consumption: EINVAL).
  BufferRing(Ring& ring, unsigned entries, std::uint16_t group);
  // Unregisters the group. Destroy it before its Ring.
  ~BufferRing();
  BufferRing(const BufferRing&) = delete;
  BufferRing& operator=(const BufferRing&) = delete;

  // Stages buffer `id` (`len` bytes at `addr`) for the kernel; publish()
  // makes the staged buffers visible. At most `entries` buffers may be in
  // the ring at once.
  void add(void* addr, unsigned len, std::uint16_t id) noexcept;
  void publish() noexcept;

  // Whether a CQE's bytes are in a buffer of the ring; then which one,
  // and whether the kernel keeps filling that buffer (it was not full).
  static bool has_buffer(std::uint32_t cqe_flags) noexcept {
    return (cqe_flags & IORING_CQE_F_BUFFER) != 0;
  }
  static std::uint16_t buffer_id(std::uint32_t cqe_flags) noexcept {
    return static_cast<std::uint16_t>(cqe_flags >> IORING_CQE_BUFFER_SHIFT);
  }
  static bool more(std::uint32_t cqe_flags) noexcept { return (cqe_flags & kBufMore) != 0; }

 private:
  Ring& ring_;
  io_uring_buf_ring* br_ = nullptr;
  std::size_t bytes_ = 0;
  const unsigned entries_;
  const std::uint16_t group_;
  unsigned staged_ = 0;
};

}  // namespace spindle::uring
