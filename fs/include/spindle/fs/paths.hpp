// Operations on paths: making and removing directories, renaming, removing
// files, stat and existence. Each is one spindle::io operation (or a few,
// for create_dirs) on the calling worker's backend: through the ring on
// io_uring, on the blocking pool on epoll. Relative paths are relative to
// the working directory.
//
// Fiber-only: every call suspends the calling fiber until the kernel
// answers. Errors are fs::Error naming the path (both, for rename).
// Mutations (create_dir, create_dirs, rename, remove_file, remove_dir) are
// never cancelled; stat, lstat and exists end early with errc::aborted on an
// abort and errc::timed_out under a deadline scope. None makes its change
// durable by itself: fsync the parent directory for that (write_file_atomic
// does).
#pragma once

#include <sys/types.h>

#include <filesystem>

#include "spindle/fs/error.hpp"
#include "spindle/fs/stat.hpp"

namespace spindle::fs {

// mkdir(2) with `mode` (less the umask). EEXIST if the path exists.
// Suspends: until done or an error.
Result<void> create_dir(const std::filesystem::path& path, mode_t mode = 0777);

// mkdir -p: `path` and every missing parent, with `mode`. Done if `path` is
// a directory already; EEXIST if it exists as something else. The error
// names the path whose mkdir failed.
// Suspends: until done or an error.
Result<void> create_dirs(const std::filesystem::path& path, mode_t mode = 0777);

enum class Rename {
  kReplace,    // rename(2): the target, if any, is replaced atomically
  kNoReplace,  // RENAME_NOREPLACE: EEXIST if the target exists
  kExchange,   // RENAME_EXCHANGE: swap the two, which must both exist
};

// renameat2(2) of `from` to `to`. With kReplace, a directory replaces only
// an empty directory.
// Suspends: until done or an error.
Result<void> rename(const std::filesystem::path& from, const std::filesystem::path& to,
                    Rename how = Rename::kReplace);

// unlink(2): a file, symlink, FIFO or socket (EISDIR for a directory).
// Suspends: until done or an error.
Result<void> remove_file(const std::filesystem::path& path);

// rmdir(2): an empty directory (ENOTEMPTY otherwise).
// Suspends: until done or an error.
Result<void> remove_dir(const std::filesystem::path& path);

// statx(2) of `path`, following a final symlink (stat) or not (lstat).
// Suspends: until done, an error, a deadline or an abort.
Result<Stat> stat(const std::filesystem::path& path);
Result<Stat> lstat(const std::filesystem::path& path);

// Whether `path` names something, following symlinks (a dangling symlink
// does not exist). false for ENOENT and ENOTDIR; other errors (EACCES on a
// parent) are errors.
// Suspends: as stat().
Result<bool> exists(const std::filesystem::path& path);

}  // namespace spindle::fs
