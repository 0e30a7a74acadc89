#include "core/block_arena.hpp"

#include <sys/mman.h>

#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>

#include "spindle/base/assert.hpp"

namespace spindle::detail {
namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;

constinit BlockArena arena;
static_assert(std::is_trivially_destructible_v<BlockArena>);

// A kChunk-byte mapping aligned to a huge page, so that the kernel can back
// it with huge pages; nullptr if the kernel refuses.
char* map_chunk() noexcept {
  const std::size_t span = BlockArena::kChunk + kHugePage;
  void* p = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  auto* raw = static_cast<char*>(p);
  const auto addr = reinterpret_cast<std::uintptr_t>(raw);
  char* start = raw + ((kHugePage - addr % kHugePage) % kHugePage);
  if (start > raw) ::munmap(raw, static_cast<std::size_t>(start - raw));
  char* end = start + BlockArena::kChunk;
  if (end < raw + span) ::munmap(end, static_cast<std::size_t>(raw + span - end));
  // Advice only: without transparent huge pages the chunk has small pages.
  ::madvise(start, BlockArena::kChunk, MADV_HUGEPAGE);
  return start;
}

}  // namespace

void* BlockArena::carve(std::size_t bytes) {
  SPINDLE_DCHECK(bytes % 16 == 0 && bytes <= kMaxCarve);
  ThreadLock lock(mutex_);
  if (static_cast<std::size_t>(end_ - next_) < bytes) {
    char* chunk = map_chunk();
    if (!chunk) throw std::bad_alloc();
    next_ = chunk;
    end_ = chunk + kChunk;
  }
  return std::exchange(next_, next_ + bytes);
}

BlockArena& block_arena() noexcept { return arena; }

}  // namespace spindle::detail
