// The names of I/O operations, and fd ids.

#include <atomic>
#include <cstddef>
#include <iterator>

#include "spindle/sched/detail/io_op.hpp"
#include "spindle/sched/io.hpp"

namespace spindle {

std::uint64_t io::new_fd_id() noexcept {
  static std::atomic<std::uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

namespace detail {

const char* io_code_name(IoCode code) noexcept {
  // In IoCode's order.
  static constexpr const char* kNames[] = {
      "nop",   "accept",    "connect", "recv",    "send",     "sendmsg",  "read",        "write",
      "fsync", "openat",    "statx",   "mkdirat", "unlinkat", "renameat", "ftruncate",   "poll",
      "readv", "fallocate", "splice",  "recvmsg", "waitid",   "openat2",  "recv_pooled", "sqe"};
  static_assert(std::size(kNames) == static_cast<std::size_t>(IoCode::kSqe) + 1);
  const auto i = static_cast<std::size_t>(code);
  return i < std::size(kNames) ? kNames[i] : "?";
}

}  // namespace detail
}  // namespace spindle
