// IoOp: one I/O operation as the backends see it: what to do and its
// arguments, with no kernel interface in it. Each backend turns it into its
// own form (an SQE; a non-blocking system call and a readiness wait; a call
// on the blocking pool). The calls of spindle/sched/io.hpp build one and run
// it with run_io().
#pragma once

#include <signal.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>

#include "spindle/base/result.hpp"

struct io_uring_sqe;
struct open_how;
struct statx;

namespace spindle {
struct IoOptions;
namespace io {
class PooledBuffer;
}
}  // namespace spindle

namespace spindle::detail {

using IoPrepareFn = void (*)(void* ctx, io_uring_sqe* sqe) noexcept;

// io_code_name() names them in this order.
enum class IoCode : std::uint8_t {
  kNop,
  kAccept,
  kConnect,
  kRecv,
  kSend,
  kSendmsg,
  kRead,
  kWrite,
  kFsync,
  kOpenat,
  kStatx,
  kMkdirat,
  kUnlinkat,
  kRenameat,
  kFtruncate,
  kPoll,
  kReadv,
  kFallocate,
  kSplice,
  kRecvmsg,
  kWaitid,      // waitid(2) of a pidfd (P_PIDFD)
  kOpenat2,     // openat2(2): an open whose lookup obeys RESOLVE_* flags
  kRecvPooled,  // recv(2) into a buffer of the worker's receive pool
  kSqe,         // io_op: any SQE, prepared by the caller (io_uring only)
};

// "recv", "fsync", ...: for dumps.
const char* io_code_name(IoCode code) noexcept;

// A value type; its pointers are the caller's, alive until the call returns.
struct IoOp {
  struct Accept {
    sockaddr* addr;
    socklen_t* len;
    int flags;
  };
  struct Connect {
    const sockaddr* addr;
    socklen_t len;
  };
  struct Transfer {  // recv, send
    void* buf;
    std::size_t len;
    int flags;
  };
  struct RecvPooled {
    io::PooledBuffer* out;  // empty; holds the bytes received, if any
    int flags;
  };
  struct Sendmsg {
    const msghdr* msg;
    int flags;
  };
  struct Recvmsg {  // the kernel updates msg's name, control and flags fields
    msghdr* msg;
    int flags;
  };
  struct Read {
    void* buf;
    std::size_t len;
    std::uint64_t offset;  // io::kStreamOffset: the fd's position
    int rw_flags;
  };
  struct Write {  // write, and readv (the iovecs it fills)
    const iovec* iov;
    unsigned count;
    std::uint64_t offset;
    int rw_flags;
  };
  struct Path {  // openat, statx, mkdirat, unlinkat
    const char* path;
    int flags;
    unsigned mode;  // open and mkdir mode, statx mask
    struct statx* statx;
  };
  struct Openat2 {  // fd: the directory the lookup starts from
    const char* path;
    const open_how* how;  // flags (O_CLOEXEC already in), mode, resolve
  };
  struct Rename {
    const char* old_path;
    int new_dirfd;
    const char* new_path;
    unsigned flags;
  };
  struct Fallocate {
    int mode;
    std::uint64_t offset;
    std::uint64_t length;
  };
  struct Splice {  // from `fd`
    int fd_out;
    unsigned flags;
    std::uint64_t offset_in;   // io::kStreamOffset: the position, or a pipe
    std::uint64_t offset_out;  // likewise
    unsigned len;
  };
  struct Waitid {  // fd: the pidfd
    siginfo_t* info;
    int options;  // WEXITED, WSTOPPED, WCONTINUED, WNOWAIT; never WNOHANG
  };
  struct Sqe {
    IoPrepareFn prepare;
    void* ctx;
  };

  IoOp(IoCode c, int f) noexcept : code(c), fd(f) {}
  // With the hints of `options` (expect_wait, fd_id).
  IoOp(IoCode c, int f, const IoOptions& options) noexcept;

  IoCode code;
  // IoOptions::expect_wait.
  bool expect_wait = false;
  // The fd, or the directory fd of a path operation (old_dirfd of a rename).
  int fd;
  // IoOptions::fd_id.
  std::uint64_t fd_id = 0;
  union {
    Accept accept;
    Connect connect;
    Transfer transfer;
    RecvPooled recv_pooled;
    Sendmsg sendmsg;
    Recvmsg recvmsg;
    Read read;
    Write write;
    Path path;
    Openat2 openat2;
    Rename rename;
    Write readv;
    Fallocate fallocate;
    Splice splice;
    Waitid waitid;
    Sqe sqe;
    bool datasync;         // fsync
    std::uint64_t length;  // ftruncate
    unsigned events;       // poll
  };
};

// `op` on the calling worker's backend, again after EINTR (and, after a
// yield, EAGAIN), until it completes, fails, times out or is aborted: the
// contract of spindle/sched/io.hpp. Fiber-only.
Result<int> run_io(const IoOp& op, const IoOptions& options);

}  // namespace spindle::detail
