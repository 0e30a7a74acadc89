// Blocking I/O for fibers: each call parks only the calling fiber until its
// operation completes on the runtime's I/O backend, while the worker runs
// others. net/ and storage/ build every call on these. Any number of fibers
// may call them at once, each for its own operation; an operation stays on
// the backend of the worker that issued it, while the fiber may resume on
// another worker.
//
// Common contract of the calls in spindle::io (and of io_op): fiber-only;
// suspends until the operation completes. Returns the result, or: the errno
// in std::system_category; errc::timed_out; errc::aborted if the fiber is
// aborted (at once if it already was; a cancellable operation in flight is
// cancelled first); errc::io_limit, at once, if the worker already has
// Config::max_io_in_flight operations in flight. EINTR is retried. Never
// returns while the kernel may still use the caller's buffers.
#pragma once

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <type_traits>

#include "spindle/base/result.hpp"
#include "spindle/base/time.hpp"
#include "spindle/base/timeout.hpp"
#include "spindle/sched/detail/io_op.hpp"
#include "spindle/sched/pooled_buffer.hpp"

namespace spindle {

struct IoOptions {
  // When it passes, the operation is cancelled and the call returns
  // errc::timed_out once the cancellation is confirmed, unless the operation
  // completed first. Operation deadlines have the granularity of
  // Config::timeout_wheel_tick: the cancel comes at the first tick at or
  // after the deadline, never before it.
  Deadline deadline = kNoDeadline;
  // A limit that starts when the operation starts to wait, so an operation
  // that completes at once never reads the clock. The earlier of its end and
  // `deadline` is the operation's deadline. Not positive: expired already
  // (the call returns errc::timed_out without trying). max(): none.
  std::chrono::nanoseconds timeout = std::chrono::nanoseconds::max();
  // The limit of the call this operation is part of, whose deadline and
  // timeout these are. When the operation starts to wait, the limit takes
  // the operation's deadline and drops its timeout, so the call's later
  // operations keep to the deadline its first wait set. May be null.
  Timeout::Limit* call_limit = nullptr;
  // false for writes and syncs: never cancelled, not by abort and not at
  // shutdown; they always run to completion. Such an operation takes no
  // deadline and no timeout.
  bool cancellable = true;
  // A hint for recv and send: the fd is probably not ready yet (the peer has
  // not answered a request just sent), so the backend waits for readiness
  // before the first attempt instead of making one that would find nothing.
  bool expect_wait = false;
  // For an fd whose owner keeps it open across many operations (a socket of
  // net/): the id the owner got from io::new_fd_id() when it took the fd,
  // given with every operation on it until the owner closes it. A backend may
  // then keep the fd registered between operations (the epoll backend does:
  // one registration per fd and worker instead of one per wait). 0: none.
  std::uint64_t fd_id = 0;
};

namespace io {

// The offset of read() and write() that means the fd's own position (and
// moves it), as read(2) and write(2) do. A pipe, socket or character device
// ignores any offset.
inline constexpr std::uint64_t kStreamOffset = ~std::uint64_t{0};
// The most bytes one recv, send, read or write moves (the kernel's cap is
// 2 GiB - 4 KiB): longer buffers are cut there.
inline constexpr std::size_t kMaxTransfer = std::size_t{1} << 30;
// The most iovecs one write takes (IOV_MAX): longer arrays are cut there.
inline constexpr std::size_t kMaxIovecs = 1024;

// A new IoOptions::fd_id, unique over the process's life. Thread-safe.
std::uint64_t new_fd_id() noexcept;

}  // namespace io

namespace detail {

inline IoOp::IoOp(IoCode c, int f, const IoOptions& options) noexcept
    : code(c), expect_wait(options.expect_wait), fd(f), fd_id(options.fd_id) {}

inline Result<std::size_t> size_result(const Result<int>& r) {
  if (!r) return failure(r.error());
  return static_cast<std::size_t>(*r);
}

inline Result<void> void_result(const Result<int>& r) {
  if (!r) return failure(r.error());
  return {};
}

inline constexpr IoOptions kNeverCancel{.cancellable = false};

}  // namespace detail

namespace io {

// accept4(2): the new connection's fd. `addr`/`len` may be null.
inline Result<int> accept(int fd, sockaddr* addr, socklen_t* len, int flags,
                          const IoOptions& options = {}) {
  detail::IoOp op(detail::IoCode::kAccept, fd, options);
  op.accept = {addr, len, flags};
  return detail::run_io(op, options);
}

inline Result<void> connect(int fd, const sockaddr* addr, socklen_t len,
                            const IoOptions& options = {}) {
  detail::IoOp op(detail::IoCode::kConnect, fd);
  op.connect = {addr, len};
  return detail::void_result(detail::run_io(op, options));
}

// recv(2) / send(2) / sendmsg(2): the bytes moved (0 from recv: end of stream).
inline Result<std::size_t> recv(int fd, std::span<std::byte> buf, int flags,
                                const IoOptions& options = {}) {
  detail::IoOp op(detail::IoCode::kRecv, fd, options);
  op.transfer = {buf.data(), std::min(buf.size(), kMaxTransfer), flags};
  return detail::size_result(detail::run_io(op, options));
}

inline Result<std::size_t> send(int fd, std::span<const std::byte> buf, int flags,
                                const IoOptions& options = {}) {
  detail::IoOp op(detail::IoCode::kSend, fd, options);
  op.transfer = {const_cast<std::byte*>(buf.data()), std::min(buf.size(), kMaxTransfer), flags};
  return detail::size_result(detail::run_io(op, options));
}

inline Result<std::size_t> sendmsg(int fd, const msghdr& msg, int flags,
                                   const IoOptions& options = {}) {
  detail::IoOp op(detail::IoCode::kSendmsg, fd, options);
  op.sendmsg = {&msg, flags};
  return detail::size_result(detail::run_io(op, options));
}

// recvmsg(2): the bytes received (0 from a stream: end of stream). The kernel
// updates `msg` as recvmsg(2) does: msg_namelen, msg_controllen and msg_flags
// (MSG_TRUNC, MSG_CTRUNC).
inline Result<std::size_t> recvmsg(int fd, msghdr& msg, int flags, const IoOptions& options = {}) {
  detail::IoOp op(detail::IoCode::kRecvmsg, fd, options);
  op.recvmsg = {&msg, flags};
  return detail::size_result(detail::run_io(op, options));
}

// recv(2) of at most kPooledBufferSize bytes into a buffer of the calling
// worker's receive pool, which the backend takes only when bytes arrive: the
// wait holds no memory. Empty at end of stream. When every buffer of the
// pool is out, the bytes go to a buffer of their own, allocated for the
// call (std::bad_alloc is ENOMEM).
Result<PooledBuffer> recv_pooled(int fd, int flags, const IoOptions& options = {});

// preadv2(2) with RWF_* `rw_flags`: the bytes read (0 at end of file).
inline Result<std::size_t> read(int fd, std::span<std::byte> buf, std::uint64_t offset,
                                int rw_flags = 0, const IoOptions& options = {}) {
  detail::IoOp op(detail::IoCode::kRead, fd);
  op.read = {buf.data(), std::min(buf.size(), kMaxTransfer), offset, rw_flags};
  return detail::size_result(detail::run_io(op, options));
}

// pwritev2(2) with RWF_* `rw_flags`: the bytes written.
inline Result<std::size_t> write(int fd, std::span<const iovec> iov, std::uint64_t offset,
                                 int rw_flags = 0, const IoOptions& options = {}) {
  detail::IoOp op(detail::IoCode::kWrite, fd);
  op.write = {iov.data(), static_cast<unsigned>(std::min(iov.size(), kMaxIovecs)), offset,
              rw_flags};
  return detail::size_result(detail::run_io(op, options));
}

// preadv2(2) into `iov` with RWF_* `rw_flags`: the bytes read (0 at end of
// file).
inline Result<std::size_t> readv(int fd, std::span<const iovec> iov, std::uint64_t offset,
                                 int rw_flags = 0, const IoOptions& options = {}) {
  detail::IoOp op(detail::IoCode::kReadv, fd);
  op.readv = {iov.data(), static_cast<unsigned>(std::min(iov.size(), kMaxIovecs)), offset,
              rw_flags};
  return detail::size_result(detail::run_io(op, options));
}

// splice(2) of up to `len` bytes from `fd_in` to `fd_out`, one of which is a
// pipe, with SPLICE_F_* `flags`: the bytes moved (0: end of input). An
// offset of kStreamOffset means the fd's position (a pipe's must be so).
// Cancellable unless `options` say otherwise (pass cancellable = false when
// `fd_out` is a file whose contents matter). The epoll backend splices
// pipes and sockets at once without blocking (it makes a socket
// O_NONBLOCK, as for accept and connect) and waits for the end that is not
// ready; with a regular file or another kind of fd it runs the call on the
// blocking pool. A splice into a socket or pipe whose reader is gone fails
// with EPIPE (the runtime ignores SIGPIPE: Runtime::run).
inline Result<std::size_t> splice(int fd_in, std::uint64_t offset_in, int fd_out,
                                  std::uint64_t offset_out, std::size_t len, unsigned flags,
                                  const IoOptions& options = {}) {
  detail::IoOp op(detail::IoCode::kSplice, fd_in);
  op.splice = {fd_out, flags, offset_in, offset_out,
               static_cast<unsigned>(std::min(len, kMaxTransfer))};
  return detail::size_result(detail::run_io(op, options));
}

// fsync(2), or fdatasync(2) with `datasync`. Never cancelled.
inline Result<void> fsync(int fd, bool datasync) {
  detail::IoOp op(detail::IoCode::kFsync, fd);
  op.datasync = datasync;
  return detail::void_result(detail::run_io(op, detail::kNeverCancel));
}

// openat(2) (O_CLOEXEC is always added): the new fd.
inline Result<int> openat(int dirfd, const char* path, int flags, mode_t mode,
                          const IoOptions& options = {}) {
  detail::IoOp op(detail::IoCode::kOpenat, dirfd);
  op.path = {path, flags, mode, nullptr};
  return detail::run_io(op, options);
}

// openat2(2) of `path` from `dirfd` with `how` (O_CLOEXEC is always added
// to its flags): the new fd. how.resolve's RESOLVE_* flags confine the
// lookup, which the kernel then refuses with its errno (EXDEV: out of
// `dirfd` under RESOLVE_BENEATH; ELOOP: a symlink where none may be). As
// openat2 does, an unknown flag, or a mode without O_CREAT or O_TMPFILE,
// is EINVAL.
inline Result<int> openat2(int dirfd, const char* path, const open_how& how,
                           const IoOptions& options = {}) {
  open_how with_cloexec = how;
  with_cloexec.flags |= O_CLOEXEC;
  detail::IoOp op(detail::IoCode::kOpenat2, dirfd);
  op.openat2 = {path, &with_cloexec};
  return detail::run_io(op, options);
}

// statx(2) into `out`.
inline Result<void> statx(int dirfd, const char* path, int flags, unsigned mask, struct statx* out,
                          const IoOptions& options = {}) {
  detail::IoOp op(detail::IoCode::kStatx, dirfd);
  op.path = {path, flags, mask, out};
  return detail::void_result(detail::run_io(op, options));
}

// mkdirat(2), unlinkat(2), renameat2(2), ftruncate(2), fallocate(2): never
// cancelled (a mutation that may or may not have happened is worse than one
// that finished).
inline Result<void> mkdirat(int dirfd, const char* path, mode_t mode) {
  detail::IoOp op(detail::IoCode::kMkdirat, dirfd);
  op.path = {path, 0, mode, nullptr};
  return detail::void_result(detail::run_io(op, detail::kNeverCancel));
}

inline Result<void> unlinkat(int dirfd, const char* path, int flags) {
  detail::IoOp op(detail::IoCode::kUnlinkat, dirfd);
  op.path = {path, flags, 0, nullptr};
  return detail::void_result(detail::run_io(op, detail::kNeverCancel));
}

inline Result<void> renameat(int old_dirfd, const char* old_path, int new_dirfd,
                             const char* new_path, unsigned flags) {
  detail::IoOp op(detail::IoCode::kRenameat, old_dirfd);
  op.rename = {old_path, new_dirfd, new_path, flags};
  return detail::void_result(detail::run_io(op, detail::kNeverCancel));
}

inline Result<void> ftruncate(int fd, std::uint64_t length) {
  detail::IoOp op(detail::IoCode::kFtruncate, fd);
  op.length = length;
  return detail::void_result(detail::run_io(op, detail::kNeverCancel));
}

inline Result<void> fallocate(int fd, int mode, std::uint64_t offset, std::uint64_t length) {
  detail::IoOp op(detail::IoCode::kFallocate, fd);
  op.fallocate = {mode, offset, length};
  return detail::void_result(detail::run_io(op, detail::kNeverCancel));
}

// Waits until `fd` has one of the poll(2) `events`: the events it has.
inline Result<unsigned> poll(int fd, unsigned events, const IoOptions& options = {}) {
  detail::IoOp op(detail::IoCode::kPoll, fd, options);
  op.events = events;
  auto r = detail::run_io(op, options);
  if (!r) return failure(r.error());
  return static_cast<unsigned>(*r);
}

// waitid(2) of P_PIDFD `pidfd`, a child of this process: waits until the
// child has a state change of `flags` (WEXITED, WSTOPPED, WCONTINUED; with
// WNOWAIT it stays waitable; never WNOHANG: call waitid(2) for a try) and
// fills `info` (si_code CLD_EXITED, CLD_KILLED, ...; si_status; si_pid).
// IORING_OP_WAITID where the ring has it (Linux 6.7); elsewhere a readiness
// wait on the pidfd and waitid(WNOHANG).
inline Result<void> waitid(int pidfd, siginfo_t& info, int flags, const IoOptions& options = {}) {
  detail::IoOp op(detail::IoCode::kWaitid, pidfd);
  op.waitid = {&info, flags};
  return detail::void_result(detail::run_io(op, options));
}

// Completes when the worker next services its backend, after the
// completions already waiting there.
inline Result<void> nop() {
  return detail::void_result(detail::run_io(detail::IoOp(detail::IoCode::kNop, -1), {}));
}

}  // namespace io

namespace detail {
Result<int> run_sqe(IoPrepareFn prepare, void* ctx, const IoOptions& options);
}  // namespace detail

// Any io_uring operation: prepares one SQE with `prepare(io_uring_sqe*)`
// (again if the kernel answers EINTR, or EAGAIN after a yield) and parks the
// fiber until its CQE. Returns the CQE's result (>= 0) or an error as above;
// on a runtime whose backend is not io_uring, errc::unsupported at once. Use
// blocking fds: io_uring waits for readiness itself, but honours O_NONBLOCK
// with EAGAIN. Never returns while the kernel may still use the buffers
// `prepare` handed it.
template <class Prepare>
Result<int> io_op(Prepare&& prepare, const IoOptions& options = {}) {
  using P = std::remove_reference_t<Prepare>;
  static_assert(std::is_nothrow_invocable_v<P&, io_uring_sqe*>,
                "the prepare callable must be noexcept(io_uring_sqe*)");
  return detail::run_sqe(
      [](void* ctx, io_uring_sqe* sqe) noexcept { (*static_cast<P*>(ctx))(sqe); },
      const_cast<std::remove_const_t<P>*>(&prepare), options);
}

}  // namespace spindle
