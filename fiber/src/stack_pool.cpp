// StackPool: fiber stacks carved out of large slab mappings.
//
// A slab is one anonymous MAP_NORESERVE mapping of about kSlabBytes, cut into
// per_slab_ strides of [guard page | stack_size_ usable bytes]. Strides are
// carved (their guards installed) only when the free list runs dry,
// kCarveBatch at a time, so the guard cost, and in kMprotect mode the extra
// mappings, grow with the number of stacks ever live at once rather than with
// the address space reserved.
//
// Guard pages: MADV_GUARD_INSTALL (Linux 6.13+) marks the page so any access
// raises SIGSEGV without splitting the VMA: a million stacks are a handful of
// mappings. Older kernels reject the advice with EINVAL; then mprotect(PROT_NONE)
// splits the slab, two mappings per stack, and vm.max_map_count (65530 by
// default) caps the pool at about 32 thousand stacks. The mode is probed once
// per pool on a scratch mapping.
//
// The top page of each carved stride, where a fiber's first frames go, is
// committed with MADV_POPULATE_WRITE outside the lock. A batch's guards and
// its tops take one process_madvise(2) each; a first touch would take a page
// fault per stack, and a fault costs more than a whole batch's system call. A
// kernel without process_madvise on the calling process gets a madvise(2) per
// range.
//
// Rejected: one mmap per stack (two mappings per stack even with madvise, and a
// syscall per allocation); returning freed stacks' memory with MADV_DONTNEED on
// every free (a syscall per fiber; a reused stack's warm pages are the point of
// the LIFO free list).

#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <iterator>
#include <stdexcept>
#include <string>
#include <system_error>

#include "spindle/base/assert.hpp"
#include "spindle/fiber/stack.hpp"

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif
#ifndef PIDFD_SELF
#define PIDFD_SELF (-10000)
#endif

namespace spindle::fiber {
namespace {

constexpr std::size_t kMinStackSize = std::size_t{16} << 10;
constexpr std::size_t kMaxStackSize = std::size_t{1} << 30;
constexpr std::size_t kSlabBytes = std::size_t{64} << 20;
constexpr std::size_t kCarveBatch = 16;  // strides guarded and committed at a time
constexpr int kMapProt = PROT_READ | PROT_WRITE;
constexpr int kMapFlags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK;

std::size_t page_size() noexcept {
  static const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return page;
}

std::size_t checked_stack_size(std::size_t requested) {
  if (requested < kMinStackSize || requested > kMaxStackSize) {
    throw std::invalid_argument("spindle::fiber::StackPool: stack_size " +
                                std::to_string(requested) + " is outside [16 KiB, 1 GiB]");
  }
  const std::size_t page = page_size();
  return (requested + page - 1) / page * page;
}

// Probes MADV_GUARD_INSTALL on a scratch mapping made like a slab.
GuardMode detect_guard_mode() {
  const std::size_t page = page_size();
  void* probe = ::mmap(nullptr, page, kMapProt, kMapFlags, -1, 0);
  if (probe == MAP_FAILED) {
    throw std::system_error(errno, std::generic_category(),
                            "spindle::fiber::StackPool: mmap of a probe page failed");
  }
  const int rc = ::madvise(probe, page, MADV_GUARD_INSTALL);
  const int err = errno;
  ::munmap(probe, page);
  if (rc == 0) return GuardMode::kMadvise;
  // EINVAL: the kernel predates the advice. EPERM: a seccomp filter refuses it.
  if (err == EINVAL || err == EPERM) return GuardMode::kMprotect;
  throw std::system_error(err, std::generic_category(),
                          "spindle::fiber::StackPool: probing MADV_GUARD_INSTALL failed");
}

// Applies `advice` to ranges[0, n): one process_madvise(2) on this process
// (Linux 6.13+ for any advice, PIDFD_SELF 6.14+), else a madvise(2) per range.
// Returns how many ranges, from the first, took the advice; errno says why the
// next one did not.
std::size_t advise(const iovec* ranges, std::size_t n, int advice) noexcept {
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < n; ++i) bytes += ranges[i].iov_len;
  if (::process_madvise(PIDFD_SELF, ranges, n, advice, 0) == static_cast<ssize_t>(bytes)) return n;
  // Both advices used here may be applied twice, so a partial batch is redone.
  for (std::size_t i = 0; i < n; ++i) {
    if (::madvise(ranges[i].iov_base, ranges[i].iov_len, advice) != 0) return i;
  }
  return n;
}

const char* mode_name(GuardMode mode) noexcept {
  return mode == GuardMode::kMadvise ? "madvise (MADV_GUARD_INSTALL, no extra mapping)"
                                     : "mprotect (2 mappings per stack)";
}

std::string read_max_map_count() {
  std::FILE* f = std::fopen("/proc/sys/vm/max_map_count", "re");
  if (f == nullptr) return "unknown";
  char buf[32] = {};
  const bool ok = std::fgets(buf, sizeof buf, f) != nullptr;
  std::fclose(f);
  if (!ok) return "unknown";
  std::string value(buf);
  while (!value.empty() && (value.back() == '\n' || value.back() == ' ')) value.pop_back();
  return value;
}

// Throws for a failed mmap/mprotect/madvise. ENOMEM from these is nearly always
// the per-process mapping limit, so the message names it and its current value.
[[noreturn]] void throw_map_error(int err, const char* call, std::size_t in_use, GuardMode mode) {
  std::string msg = "spindle::fiber::StackPool: ";
  msg += call;
  msg += " failed with ";
  msg += std::to_string(in_use);
  msg += " stacks in use, guard mode ";
  msg += mode_name(mode);
  if (err == ENOMEM) {
    msg += "; the likely limit is vm.max_map_count (currently " + read_max_map_count() +
           "; raise it with sysctl -w vm.max_map_count=N) or the address-space limit";
  }
  throw std::system_error(err, std::generic_category(), msg);
}

}  // namespace

StackPool::StackPool(std::size_t stack_size)
    : stack_size_(checked_stack_size(stack_size)),
      stride_(stack_size_ + page_size()),
      per_slab_(std::max<std::size_t>(1, kSlabBytes / stride_)),
      guard_mode_(detect_guard_mode()) {}

StackPool::~StackPool() {
  const std::size_t slab_bytes = per_slab_ * stride_;
  for (void* slab : slabs_) ::munmap(slab, slab_bytes);
}

void StackPool::grow() {
  // Invariant kept here: free_.capacity() >= stacks carved from all slabs, so
  // deallocate() never allocates. Reserve before mapping so a bad_alloc leaks
  // nothing.
  const std::size_t carvable = (slabs_.size() + 1) * per_slab_;
  if (free_.capacity() < carvable) free_.reserve(std::max(carvable, 2 * free_.capacity()));
  slabs_.reserve(slabs_.size() + 1);
  void* slab = ::mmap(nullptr, per_slab_ * stride_, kMapProt, kMapFlags, -1, 0);
  if (slab == MAP_FAILED) throw_map_error(errno, "mmap of a stack slab", in_use_, guard_mode_);
  slabs_.push_back(slab);
  slab_next_ = 0;
}

Stack StackPool::allocate() {
  std::array<Stack, kCarveBatch> carved;
  std::size_t n = 0;
  {
    detail::ThreadLock lock(mutex_);
    if (!free_.empty()) {
      const Stack stack = free_.back();
      free_.pop_back();
      ++in_use_;
      return stack;
    }
    n = carve(carved.data());
    ++in_use_;
  }
  // Outside the lock: a commit failure only leaves the page to its first touch.
  const std::size_t page = page_size();
  std::array<iovec, kCarveBatch> tops;
  for (std::size_t i = 0; i < n; ++i) {
    tops[i] = iovec{static_cast<char*>(carved[i].base) - page, page};
  }
  (void)advise(tops.data(), n, MADV_POPULATE_WRITE);
  if (n > 1) {
    detail::ThreadLock lock(mutex_);
    // Never reallocates: see grow(). The lowest stride is handed out next.
    free_.insert(free_.end(), std::make_reverse_iterator(carved.begin() + n), carved.rend() - 1);
  }
  return carved[0];
}

std::size_t StackPool::carve(Stack* out) {
  if (slabs_.empty() || slab_next_ == per_slab_) grow();
  const std::size_t page = page_size();
  const std::size_t want = std::min(kCarveBatch, per_slab_ - slab_next_);
  char* const first = static_cast<char*>(slabs_.back()) + slab_next_ * stride_;
  std::size_t n = 0;
  if (guard_mode_ == GuardMode::kMadvise) {
    std::array<iovec, kCarveBatch> guards;
    for (std::size_t i = 0; i < want; ++i) guards[i] = iovec{first + i * stride_, page};
    n = advise(guards.data(), want, MADV_GUARD_INSTALL);
    if (n == 0) throw_map_error(errno, "madvise(MADV_GUARD_INSTALL)", in_use_, guard_mode_);
  } else {
    while (n < want && ::mprotect(first + n * stride_, page, PROT_NONE) == 0) ++n;
    if (n == 0) throw_map_error(errno, "mprotect of a guard page", in_use_, guard_mode_);
  }
  slab_next_ += n;
  for (std::size_t i = 0; i < n; ++i) {
    char* const guard = first + i * stride_;
    out[i] = Stack{guard + page + stack_size_, guard + page};
  }
  return n;
}

void StackPool::deallocate(Stack stack) noexcept {
  if (!stack) return;
  SPINDLE_DCHECK(stack.size() == stack_size_, "stack from another pool");
  detail::ThreadLock lock(mutex_);
  SPINDLE_DCHECK(in_use_ > 0, "more stacks freed than allocated");
  free_.push_back(stack);  // never reallocates: see grow()
  --in_use_;
}

std::size_t StackPool::in_use() const noexcept {
  detail::ThreadLock lock(mutex_);
  return in_use_;
}

}  // namespace spindle::fiber
