#include "output_cache.hpp"

#include <array>
#include <utility>

namespace spindle::tls::detail {
namespace {

// Buffers one thread keeps: enough for the writers its fibers interleave.
constexpr std::size_t kKeptPerThread = 4;

struct Cache {
  std::array<std::string, kKeptPerThread> buffers;
  std::size_t size = 0;
};

thread_local Cache t_cache;

}  // namespace

[[gnu::noinline]] std::string take_output_buffer(std::size_t capacity) {
  Cache& c = t_cache;
  if (c.size > 0) {
    std::string s = std::move(c.buffers[--c.size]);
    if (s.capacity() >= capacity) return s;
  }
  std::string s;
  s.reserve(capacity);
  return s;
}

[[gnu::noinline]] void keep_output_buffer(std::string&& buffer) noexcept {
  Cache& c = t_cache;
  if (c.size == kKeptPerThread) return;  // `buffer` frees it
  buffer.clear();
  c.buffers[c.size++] = std::move(buffer);
}

}  // namespace spindle::tls::detail
