// File operations on the ring. Each is one io_op; the SQE is filled by hand
// where liburing 2.3 has no helper (IORING_OP_FTRUNCATE, opcode 55).
#include "file_ops.hpp"

#include <fcntl.h>
#include <liburing.h>
#include <linux/stat.h>
#include <unistd.h>

#include <cerrno>

#include "spindle/sched/context.hpp"
#include "spindle/sched/io.hpp"
#include "spindle/uring/probe.hpp"

namespace spindle::storage::detail {
namespace {

constexpr IoOptions kNeverCancel{.cancellable = false};
constexpr std::uint8_t kOpFtruncate = 55;  // IORING_OP_FTRUNCATE, Linux 6.9

Result<void> check(const Result<int>& r) {
  if (!r) return failure(r.error());
  return {};
}

}  // namespace

bool ring_has_ftruncate() {
  // One probe ring, once per process.
  static const bool has = uring::require_kernel_support().op_ftruncate;
  return has;
}

Result<UniqueFd> open_at(int dirfd, const char* path, int flags, mode_t mode) {
  auto r = io_op([&](io_uring_sqe* sqe) noexcept {
    io_uring_prep_openat(sqe, dirfd, path, flags | O_CLOEXEC, mode);
  });
  if (!r) return failure(r.error());
  return UniqueFd(*r);
}

Result<void> mkdir_at(int dirfd, const char* path, mode_t mode) {
  return check(
      io_op([&](io_uring_sqe* sqe) noexcept { io_uring_prep_mkdirat(sqe, dirfd, path, mode); },
            kNeverCancel));
}

Result<void> unlink_at(int dirfd, const char* path, int flags) {
  return check(
      io_op([&](io_uring_sqe* sqe) noexcept { io_uring_prep_unlinkat(sqe, dirfd, path, flags); },
            kNeverCancel));
}

Result<std::uint64_t> file_size(int fd) {
  struct statx st{};
  auto r = io_op([&](io_uring_sqe* sqe) noexcept {
    io_uring_prep_statx(sqe, fd, "", AT_EMPTY_PATH, STATX_SIZE, &st);
  });
  if (!r) return failure(r.error());
  return st.stx_size;
}

Result<void> truncate(int fd, std::uint64_t len) {
  if (ring_has_ftruncate()) {
    return check(io_op(
        [&](io_uring_sqe* sqe) noexcept {
          // io_uring_prep_rw zeroes what io_ftruncate_prep requires zero
          // (rw_flags, addr, len, buf_index, splice_fd_in, addr3).
          io_uring_prep_rw(kOpFtruncate, sqe, fd, nullptr, 0, len);
        },
        kNeverCancel));
  }
  // The blocking pool may outlive an aborted caller's wait: it gets its own fd.
  const int dup = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (dup < 0) return errno_failure(errno);
  auto done = spawn_blocking([held = UniqueFd(dup), len]() -> int {
    return ::ftruncate(held.get(), static_cast<off_t>(len)) == 0 ? 0 : errno;
  });
  auto r = done.join();
  if (!r) return failure(r.error());
  if (*r != 0) return errno_failure(*r);
  return {};
}

Result<void> sync_file(int fd, bool datasync) {
  return check(io_op(
      [&](io_uring_sqe* sqe) noexcept {
        io_uring_prep_fsync(sqe, fd, datasync ? IORING_FSYNC_DATASYNC : 0);
      },
      kNeverCancel));
}

Result<std::size_t> read_some(int fd, std::span<std::byte> out, std::uint64_t offset,
                              int rw_flags) {
  const auto len = static_cast<unsigned>(std::min(out.size(), kMaxIoChunk));
  auto r = io_op([&](io_uring_sqe* sqe) noexcept {
    io_uring_prep_read(sqe, fd, out.data(), len, offset);
    sqe->rw_flags = rw_flags;
  });
  if (!r) return failure(r.error());
  return static_cast<std::size_t>(*r);
}

Result<std::size_t> write_some(int fd, std::span<const iovec> iov, std::uint64_t offset,
                               int rw_flags) {
  const auto n = static_cast<unsigned>(std::min(iov.size(), kMaxIovecs));
  auto r = io_op(
      [&](io_uring_sqe* sqe) noexcept {
        if (n == 1) {
          io_uring_prep_write(sqe, fd, iov[0].iov_base, static_cast<unsigned>(iov[0].iov_len),
                              offset);
        } else {
          io_uring_prep_writev(sqe, fd, iov.data(), n, offset);
        }
        sqe->rw_flags = rw_flags;
        // XFS and btrfs take a buffered RWF_DSYNC write inline and then wait
        // for the disk inside io_uring_enter, blocking the worker: a sync
        // write always goes to an io-wq thread.
        if ((rw_flags & RWF_DSYNC) != 0) sqe->flags |= IOSQE_ASYNC;
      },
      kNeverCancel);
  if (!r) return failure(r.error());
  return static_cast<std::size_t>(*r);
}

Result<void> sync_directory(int dirfd, const char* path) {
  auto dir = open_at(dirfd, path, O_RDONLY | O_DIRECTORY);
  if (!dir) return failure(dir.error());
  return sync_file(dir->get(), false);
}

}  // namespace spindle::storage::detail
