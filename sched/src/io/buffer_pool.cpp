#include "io/buffer_pool.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <system_error>
#include <utility>

#include "core/current.hpp"
#include "core/metrics.hpp"
#include "core/worker.hpp"
#include "io/driver.hpp"
#include "spindle/base/assert.hpp"
#include "spindle/sched/io.hpp"

namespace spindle {
namespace detail {

BufferPool::Handle BufferPool::create(const WorkerRemote& owner) {
  void* slab = ::mmap(nullptr, kCount * kSize, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (slab == MAP_FAILED) {
    throw std::system_error(errno, std::system_category(), "spindle: mapping a receive pool");
  }
  return Handle(new BufferPool(owner, static_cast<std::byte*>(slab)));
}

BufferPool::BufferPool(const WorkerRemote& owner, std::byte* slab) noexcept
    : owner_(owner), slab_(slab) {
  // The lowest ids on top: the first receives reuse the same few buffers.
  for (std::uint32_t i = 0; i < kCount; ++i) free_[i] = kCount - 1 - i;
  free_count_ = kCount;
}

BufferPool::~BufferPool() { ::munmap(slab_, kCount * kSize); }

bool BufferPool::take(std::uint32_t& id) noexcept {
  if (free_count_ == 0) collect();
  if (free_count_ == 0) return false;
  id = free_[--free_count_];
  return true;
}

void BufferPool::put(std::uint32_t id) noexcept {
  SPINDLE_ASSERT(free_count_ < kCount, "a receive pool buffer freed twice");
  free_[free_count_++] = id;
}

void BufferPool::collect() noexcept {
  if (returned_.load(std::memory_order_relaxed) == 0) return;
  std::uint32_t top = returned_.exchange(0, std::memory_order_acquire);
  while (top != 0) {
    const std::uint32_t id = top - 1;
    top = next_[id];
    put(id);
  }
}

void BufferPool::lend(io::PooledBuffer& out, std::uint32_t id, std::size_t offset,
                      std::size_t n) noexcept {
  SPINDLE_ASSERT(out.pool_ == nullptr && out.data_ == nullptr, "lending into a full PooledBuffer");
  holds_[id].fetch_add(1, std::memory_order_relaxed);
  refs_.fetch_add(1, std::memory_order_relaxed);
  out.data_ = buffer(id) + offset;
  out.size_ = n;
  out.pool_ = this;
  out.id_ = id;
}

void BufferPool::hand_to_kernel(std::uint32_t id) noexcept {
  holds_[id].store(kKernel, std::memory_order_relaxed);
  filled_[id] = 0;
}

void BufferPool::filled(std::uint32_t id, std::size_t n, io::PooledBuffer* out,
                        bool done) noexcept {
  if (out != nullptr && n > 0) lend(*out, id, filled_[id], n);
  filled_[id] += static_cast<std::uint32_t>(n);
  if (done) release(id, kKernel);
}

void BufferPool::give_back(std::uint32_t id) noexcept {
  release(id, 1);
  unref();
}

void BufferPool::release(std::uint32_t id, std::uint32_t hold) noexcept {
  if (holds_[id].fetch_sub(hold, std::memory_order_acq_rel) != hold) return;
  // The last hold: the buffer is free. After close() nothing takes buffers.
  if (closed_.load(std::memory_order_acquire)) return;
  Worker* here = current_worker();
  if (here != nullptr && &here->remote() == &owner_) {
    put(id);
    return;
  }
  std::uint32_t top = returned_.load(std::memory_order_relaxed);
  do {
    next_[id] = top;
  } while (!returned_.compare_exchange_weak(top, id + 1, std::memory_order_release,
                                            std::memory_order_relaxed));
}

void BufferPool::close() noexcept {
  closed_.store(true, std::memory_order_release);
  unref();
}

std::byte* BufferPool::allocate(io::PooledBuffer& out) {
  SPINDLE_ASSERT(out.pool_ == nullptr && out.data_ == nullptr,
                 "allocating into a full PooledBuffer");
  out.data_ = new std::byte[kSize];
  out.size_ = 0;
  return out.data_;
}

void BufferPool::unref() noexcept {
  if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
}

}  // namespace detail

Result<io::PooledBuffer> io::recv_pooled(int fd, int flags, const IoOptions& options) {
  PooledBuffer out;
  // io_uring without an incremental buffer ring has no pool to select from.
  if (detail::current_driver().supports(detail::IoCode::kRecvPooled)) {
    detail::IoOp op(detail::IoCode::kRecvPooled, fd, options);
    op.recv_pooled = {&out, flags};
    auto r = detail::run_io(op, options);
    if (r) return out;
    if (r.error() != std::errc::no_buffer_space) return failure(r.error());
  }
  // No pool, or every buffer of it out: a buffer of the call's own.
  detail::count(detail::Stat::kPooledFallbacks);
  std::byte* own = nullptr;
  try {
    own = detail::BufferPool::allocate(out);
  } catch (const std::bad_alloc&) {
    return errno_failure(ENOMEM);
  }
  auto n = recv(fd, {own, kPooledBufferSize}, flags, options);
  if (!n) return failure(n.error());
  if (*n == 0) out.reset();
  detail::BufferPool::set_size(out, *n);
  return out;
}

io::PooledBuffer io::PooledBuffer::copy_of(std::span<const std::byte> bytes) {
  PooledBuffer b;
  const std::size_t n = std::min(bytes.size(), kPooledBufferSize);
  if (n == 0) return b;
  b.data_ = new std::byte[n];
  std::memcpy(b.data_, bytes.data(), n);
  b.size_ = n;
  return b;
}

io::PooledBuffer::PooledBuffer(PooledBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      pool_(std::exchange(o.pool_, nullptr)),
      id_(o.id_) {}

io::PooledBuffer& io::PooledBuffer::operator=(PooledBuffer&& o) noexcept {
  if (this != &o) {
    reset();
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    pool_ = std::exchange(o.pool_, nullptr);
    id_ = o.id_;
  }
  return *this;
}

void io::PooledBuffer::reset() noexcept {
  if (pool_ != nullptr) {
    std::exchange(pool_, nullptr)->give_back(id_);
  } else {
    delete[] data_;
  }
  data_ = nullptr;
  size_ = 0;
}

}  // namespace spindle
