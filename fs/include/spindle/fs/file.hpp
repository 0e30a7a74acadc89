// fs::File: an open file descriptor, owned and closed when the File goes,
// with blocking-style calls that park the calling fiber: reads and writes
// at the file's position or at an offset, their vectored forms, loops over
// short transfers, syncs, space allocation, truncation and stat.
//
// Every call is one spindle::io operation on the calling worker's backend:
// through the ring on io_uring; on the epoll backend a read the page cache
// serves is done at once, anything that would wait for the disk runs on
// the blocking pool, and a pipe, FIFO or socket waits for readiness.
//
// Errors are fs::Error (spindle/fs/error.hpp) naming the path the File was
// opened with. Reads are cancellable: an abort of the calling fiber ends
// one with errc::aborted, and a deadline scope (this_fiber::with_deadline)
// with errc::timed_out. Writes, syncs, fallocate and truncate are never
// cancelled, not even at shutdown; on a pipe or FIFO that nobody reads, a
// write therefore waits until someone does or the reader closes (EPIPE: the
// runtime ignores SIGPIPE, see Runtime::run).
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>

#include "spindle/base/unique_fd.hpp"
#include "spindle/fs/error.hpp"
#include "spindle/fs/open.hpp"
#include "spindle/fs/stat.hpp"

namespace spindle::fs {

// Fiber-only. Calls at the file's position (read, write, readv, writev,
// read_exact, write_all, seek) are for one fiber at a time, as read(2) on a
// shared descriptor would interleave; the calls at an offset, the syncs,
// fallocate, truncate and stat may run from several fibers at once. Moving,
// closing or destroying a File while a call on it runs is a bug.
class File {
 public:
  // Not open: every call fails with EBADF.
  File() noexcept = default;
  // Takes `fd` (a pipe end, a descriptor opened elsewhere); `name` is the
  // path its errors name.
  explicit File(UniqueFd fd, std::filesystem::path name = {}) noexcept;
  File(File&&) noexcept = default;
  File& operator=(File&&) noexcept = default;
  // Closes the descriptor (see close()).
  ~File() = default;

  // openat(2) of `path` relative to the working directory, with `open`'s
  // flags (or raw O_* `flags`; O_CLOEXEC is always added) and, when it
  // creates the file, `mode` (less the umask).
  // Suspends: until the file is open, an error or an abort.
  static Result<File> open(const std::filesystem::path& path, Open open = Open::kRead,
                           mode_t mode = 0666);
  static Result<File> open(const std::filesystem::path& path, int flags, mode_t mode = 0666);
  // openat2(2) of the relative `path` beneath the directory `dir` (a File
  // open on a directory; O_PATH | O_DIRECTORY is enough), with raw O_*
  // `flags` (O_CLOEXEC is always added) and, when it creates the file,
  // `mode` (less the umask). The lookup never leaves `dir`
  // (RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS): a ".." above it, an absolute
  // `path`, or a symlink whose target leads out of it (an absolute symlink
  // always does, even to a file inside) fails with EXDEV
  // (std::errc::cross_device_link); a procfs magic link with ELOOP.
  // Symlinks that stay beneath `dir` are followed. The error, and the
  // File, name dir.path() / path. `dir` may serve any number of fibers at
  // once.
  // Suspends: as open().
  static Result<File> open_beneath(const File& dir, const std::filesystem::path& path, int flags,
                                   mode_t mode = 0666);
  // open() for writing, created if missing and emptied if not.
  // Suspends: as open().
  static Result<File> create(const std::filesystem::path& path, mode_t mode = 0666);

  // Read at the file's position, which moves (for a pipe or socket, what
  // has arrived): the bytes read, at least one unless at end of file (0) or
  // `buf` is empty.
  // Suspends: until bytes arrive, end of file, an error, a deadline or an abort.
  Result<std::size_t> read(std::span<std::byte> buf);
  // Read at `offset`; the position stays.
  Result<std::size_t> pread(std::span<std::byte> buf, std::uint64_t offset);
  // Vectored: fills the buffers of `iov` in order (at most io::kMaxIovecs).
  Result<std::size_t> readv(std::span<const iovec> iov);
  Result<std::size_t> preadv(std::span<const iovec> iov, std::uint64_t offset);
  // Fills all of `buf`, across as many reads as it takes. End of file
  // first: errc::unexpected_eof, with the bytes before it in `buf`.
  Result<void> read_exact(std::span<std::byte> buf);
  Result<void> pread_exact(std::span<std::byte> buf, std::uint64_t offset);

  // Write at the file's position, which moves (at the end, with
  // Open::kAppend): the bytes written, which may be fewer than given.
  // Suspends: until the kernel took the bytes (not until the disk did:
  // see fsync) or an error; never cancelled.
  Result<std::size_t> write(std::span<const std::byte> buf);
  // Write at `offset`; the position stays.
  Result<std::size_t> pwrite(std::span<const std::byte> buf, std::uint64_t offset);
  // Vectored: the buffers of `iov` in order (at most io::kMaxIovecs).
  Result<std::size_t> writev(std::span<const iovec> iov);
  Result<std::size_t> pwritev(std::span<const iovec> iov, std::uint64_t offset);
  // Writes all of `buf`, across as many writes as it takes.
  Result<void> write_all(std::span<const std::byte> buf);
  Result<void> write_all(std::string_view buf);
  Result<void> pwrite_all(std::span<const std::byte> buf, std::uint64_t offset);
  Result<void> pwrite_all(std::string_view buf, std::uint64_t offset);

  // fsync(2): the contents and the metadata reach the disk.
  // Suspends: until the disk has them, or an error; never cancelled.
  Result<void> fsync();
  // fdatasync(2): the contents, and what metadata reading them needs.
  // Suspends: as fsync(); never cancelled.
  Result<void> fdatasync();
  // fallocate(2) with FALLOC_FL_* `mode` over [offset, offset + length):
  // 0 allocates and grows the file, FALLOC_FL_KEEP_SIZE allocates only,
  // FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE frees. EOPNOTSUPP where the
  // file system lacks the mode.
  // Suspends: until done or an error; never cancelled.
  Result<void> fallocate(int mode, std::uint64_t offset, std::uint64_t length);
  // ftruncate(2): cut or extend (with zeros) to `length` bytes.
  // Suspends: until done or an error; never cancelled.
  Result<void> truncate(std::uint64_t length);
  // statx(2) of the open file.
  // Suspends: until done, an error or an abort.
  Result<Stat> stat() const;
  // statx(2) of the open file with AT_STATX_DONT_SYNC, on the calling
  // thread: the attributes the kernel holds. A network file system (NFS,
  // FUSE, SMB) may hold older ones than its server's, which it does not
  // ask; on a local file system this is stat(). For a caller that stats
  // often, such as a server answering with a file's size: no round trip
  // through the I/O backend.
  // Never suspends; any thread.
  Result<Stat> stat_cached() const;

  // lseek(2) with SEEK_SET, SEEK_CUR, SEEK_END (SEEK_DATA, SEEK_HOLE): the
  // new position. A plain system call that never waits for the disk.
  Result<std::uint64_t> seek(std::int64_t offset, int whence = SEEK_SET);

  // Closes the descriptor now with close(2), which does not wait for the
  // disk, and reports its error (an earlier write-back failure on some file
  // systems). The destructor closes the same way and drops the error.
  Result<void> close();

  bool is_open() const noexcept { return bool(fd_); }
  int native_handle() const noexcept { return fd_.get(); }
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::unexpected<Error> fail(std::error_code code, const char* op) const {
    return detail::fail(code, op, path_);
  }
  Result<void> read_all_at(std::span<std::byte> buf, std::uint64_t offset);
  Result<void> write_all_at(std::span<const std::byte> buf, std::uint64_t offset);

  UniqueFd fd_;
  std::filesystem::path path_;
};

}  // namespace spindle::fs
