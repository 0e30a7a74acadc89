#include "spindle/uring/buffer_ring.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "spindle/base/assert.hpp"
#include "spindle/uring/ring.hpp"

namespace spindle::uring {

BufferRing::BufferRing(Ring& ring, unsigned entries, std::uint16_t group)
    : ring_(ring), entries_(entries), group_(group) {
  SPINDLE_ASSERT(entries > 0 && entries <= 32768 && (entries & (entries - 1)) == 0,
                 "a buffer ring's entries must be a power of two up to 32768");
  // The kernel wants the slots page-aligned: a mapping of their own.
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  bytes_ = (entries * sizeof(io_uring_buf) + page - 1) / page * page;
  void* mem = ::mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    throw std::system_error(errno, std::system_category(), "spindle: mapping a buffer ring");
  }
  br_ = static_cast<io_uring_buf_ring*>(mem);
  io_uring_buf_ring_init(br_);
  io_uring_buf_reg reg{};
  reg.ring_addr = reinterpret_cast<std::uintptr_t>(br_);
  reg.ring_entries = entries;
  reg.bgid = group;
  reg.pad = kIncremental;  // the kernel's `flags` field
  if (const int ret = io_uring_register_buf_ring(&ring.ring_, &reg, 0); ret < 0) {
    ::munmap(br_, bytes_);
    throw std::system_error(-ret, std::system_category(),
                            "spindle: registering a provided-buffer ring");
  }
}

BufferRing::~BufferRing() {
  io_uring_unregister_buf_ring(&ring_.ring_, group_);
  ::munmap(br_, bytes_);
}

void BufferRing::add(void* addr, unsigned len, std::uint16_t id) noexcept {
  io_uring_buf_ring_add(br_, addr, len, id, io_uring_buf_ring_mask(entries_),
                        static_cast<int>(staged_));
  ++staged_;
}

void BufferRing::publish() noexcept {
  if (staged_ == 0) return;
  io_uring_buf_ring_advance(br_, static_cast<int>(staged_));
  staged_ = 0;
}

}  // namespace spindle::uring
