// The names of I/O operations, and fd ids.

#include <atomic>

#include "spindle/sched/detail/io_op.hpp"
#include "spindle/sched/io.hpp"

namespace spindle {

std::uint64_t io::new_fd_id() noexcept {
  static std::atomic<std::uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

namespace detail {

const char* io_code_name(IoCode code) noexcept {
  switch (code) {
    case IoCode::kNop:
      return "nop";
    case IoCode::kAccept:
      return "accept";
    case IoCode::kConnect:
      return "connect";
    case IoCode::kRecv:
      return "recv";
    case IoCode::kSend:
      return "send";
    case IoCode::kSendmsg:
      return "sendmsg";
    case IoCode::kRead:
      return "read";
    case IoCode::kWrite:
      return "write";
    case IoCode::kFsync:
      return "fsync";
    case IoCode::kOpenat:
      return "openat";
    case IoCode::kStatx:
      return "statx";
    case IoCode::kMkdirat:
      return "mkdirat";
    case IoCode::kUnlinkat:
      return "unlinkat";
    case IoCode::kRenameat:
      return "renameat";
    case IoCode::kFtruncate:
      return "ftruncate";
    case IoCode::kPoll:
      return "poll";
    case IoCode::kSqe:
      return "sqe";
  }
  return "?";
}

}  // namespace detail
}  // namespace spindle
