// File operations on the calling worker's ring, one SQE each (io_op). Private
// to storage/. Every call is fiber-only and suspends until its CQE.
//
// Cancellable (an abort of the calling fiber ends them with errc::aborted):
// OPENAT, STATX, READ. Never cancelled (they always run to completion, also at
// shutdown): WRITE(V), FSYNC, FTRUNCATE, MKDIRAT, UNLINKAT. A mutation that
// may or may not have happened is worse than one that finished. Descriptors
// are closed with a plain close(), which does not wait for the disk.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <span>

#include "spindle/base/result.hpp"
#include "spindle/base/unique_fd.hpp"

namespace spindle::storage::detail {

// RWF_DONTCACHE (Linux 6.14); older glibc headers lack it.
inline constexpr int kRwfDontCache = 0x00000080;
// The most one READ/WRITE SQE moves (the kernel caps at 2 GiB - 4 KiB).
inline constexpr std::size_t kMaxIoChunk = std::size_t{1} << 30;
// The most iovecs one WRITEV takes (IOV_MAX).
inline constexpr std::size_t kMaxIovecs = 1024;

Result<UniqueFd> open_at(int dirfd, const char* path, int flags, mode_t mode = 0);
// EEXIST is returned as an error like any other; the caller decides.
Result<void> mkdir_at(int dirfd, const char* path, mode_t mode);
Result<void> unlink_at(int dirfd, const char* path, int flags);
// st_size of an open file (STATX with AT_EMPTY_PATH).
Result<std::uint64_t> file_size(int fd);
// True if the kernel has IORING_OP_FTRUNCATE (probed once per process).
bool ring_has_ftruncate();
// IORING_OP_FTRUNCATE where the kernel has it (Linux 6.9+), else ftruncate()
// on the blocking pool.
Result<void> truncate(int fd, std::uint64_t len);
// fsync, or fdatasync with `datasync`.
Result<void> sync_file(int fd, bool datasync);
// One READ: the bytes read (0 at end of file).
Result<std::size_t> read_some(int fd, std::span<std::byte> out, std::uint64_t offset, int rw_flags);
// One WRITEV of at most kMaxIovecs iovecs: the bytes written.
Result<std::size_t> write_some(int fd, std::span<const iovec> iov, std::uint64_t offset,
                               int rw_flags);
// Opens `path` under `dirfd` as a directory and fsyncs it (its entries become durable).
Result<void> sync_directory(int dirfd, const char* path);

}  // namespace spindle::storage::detail
