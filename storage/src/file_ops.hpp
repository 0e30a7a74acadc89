// File operations of storage/ that add something to spindle::io's: an fd
// owned, a size, a directory made durable. Private to storage/. Every call
// is fiber-only and suspends until its operation completes.
//
// Cancellable (an abort of the calling fiber ends them with errc::aborted):
// opening, statx and reads. Never cancelled (they always run to completion,
// also at shutdown): writes, syncs, truncation, mkdir and unlink. A mutation
// that may or may not have happened is worse than one that finished.
// Descriptors are closed with a plain close(), which does not wait for the
// disk.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "spindle/base/result.hpp"
#include "spindle/base/unique_fd.hpp"
#include "spindle/sched/io.hpp"

namespace spindle::storage::detail {

// RWF_DONTCACHE (Linux 6.14); older glibc headers lack it.
inline constexpr int kRwfDontCache = 0x00000080;
// How storage writes: never cancelled.
inline constexpr IoOptions kWriteOptions{.cancellable = false};

Result<UniqueFd> open_at(int dirfd, const char* path, int flags, mode_t mode = 0);
// st_size of an open file (statx with AT_EMPTY_PATH).
Result<std::uint64_t> file_size(int fd);
// Opens `path` under `dirfd` as a directory and fsyncs it (its entries become durable).
Result<void> sync_directory(int dirfd, const char* path);

}  // namespace spindle::storage::detail
