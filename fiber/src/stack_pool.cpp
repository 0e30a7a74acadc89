// StackPool: fiber stacks carved out of large slab mappings.
//
// A slab is one anonymous MAP_NORESERVE mapping of about kSlabBytes, cut into
// per_slab_ strides of [guard page | stack_size_ usable bytes]. A stride is
// carved (its guard installed) only when first handed out, so the guard cost,
// and in kMprotect mode the extra mappings, grow with the number of stacks ever
// live at once rather than with the address space reserved.
//
// Guard pages: MADV_GUARD_INSTALL (Linux 6.13+) marks the page so any access
// raises SIGSEGV without splitting the VMA: a million stacks are a handful of
// mappings. Older kernels reject the advice with EINVAL; then mprotect(PROT_NONE)
// splits the slab, two mappings per stack, and vm.max_map_count (65530 by
// default) caps the pool at about 32 thousand stacks. The mode is probed once
// per pool on a scratch mapping.
//
// Rejected: one mmap per stack (two mappings per stack even with madvise, and a
// syscall per allocation); returning freed stacks' memory with MADV_DONTNEED on
// every free (a syscall per fiber; a reused stack's warm pages are the point of
// the LIFO free list).

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <system_error>

#include "spindle/base/assert.hpp"
#include "spindle/fiber/stack.hpp"

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

namespace spindle::fiber {
namespace {

constexpr std::size_t kMinStackSize = std::size_t{16} << 10;
constexpr std::size_t kMaxStackSize = std::size_t{1} << 30;
constexpr std::size_t kSlabBytes = std::size_t{64} << 20;
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
  std::lock_guard lock(mutex_);
  if (!free_.empty()) {
    const Stack stack = free_.back();
    free_.pop_back();
    ++in_use_;
    return stack;
  }
  if (slabs_.empty() || slab_next_ == per_slab_) grow();
  const std::size_t page = page_size();
  char* guard = static_cast<char*>(slabs_.back()) + slab_next_ * stride_;
  if (guard_mode_ == GuardMode::kMadvise) {
    if (::madvise(guard, page, MADV_GUARD_INSTALL) != 0) {
      throw_map_error(errno, "madvise(MADV_GUARD_INSTALL)", in_use_, guard_mode_);
    }
  } else if (::mprotect(guard, page, PROT_NONE) != 0) {
    throw_map_error(errno, "mprotect of a guard page", in_use_, guard_mode_);
  }
  ++slab_next_;
  ++in_use_;
  return Stack{guard + page + stack_size_, guard + page};
}

void StackPool::deallocate(Stack stack) noexcept {
  if (!stack) return;
  SPINDLE_DCHECK(stack.size() == stack_size_, "stack from another pool");
  std::lock_guard lock(mutex_);
  SPINDLE_DCHECK(in_use_ > 0, "more stacks freed than allocated");
  free_.push_back(stack);  // never reallocates: see grow()
  --in_use_;
}

std::size_t StackPool::in_use() const noexcept {
  std::lock_guard lock(mutex_);
  return in_use_;
}

}  // namespace spindle::fiber
