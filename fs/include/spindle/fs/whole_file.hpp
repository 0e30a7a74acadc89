// Whole files in one call: read_file, write_file, and write_file_atomic,
// which replaces a file so that a crash leaves either the old contents or
// the new, never a mix or a truncated file.
//
// Fiber-only; each call parks the calling fiber through its operations
// (spindle/fs/file.hpp says which backend does what). Errors are fs::Error
// naming the path.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

#include "spindle/fs/error.hpp"

namespace spindle::fs {

// The whole contents of `path`, read until end of file (a size stat reports
// is only a hint: /proc files say 0, and a file may grow meanwhile).
// Suspends: until read, an error, a deadline or an abort.
Result<std::string> read_file(const std::filesystem::path& path);

// Creates or truncates `path` (created with `mode`, less the umask) and
// writes `data`. Nothing is synced: a crash may leave the file empty or
// partly written; see write_file_atomic.
// Suspends: until the kernel has the bytes, or an error; once the file is
// open, never cancelled.
Result<void> write_file(const std::filesystem::path& path, std::span<const std::byte> data,
                        mode_t mode = 0666);
Result<void> write_file(const std::filesystem::path& path, std::string_view data,
                        mode_t mode = 0666);

// Replaces `path` with `data`, durably and atomically:
//   1. opens the directory of `path`,
//   2. creates a temporary file `.<name>.<random>.tmp` beside it (mode
//      `mode`, less the umask; an existing file's mode is not kept),
//   3. writes `data` to it and fsyncs it,
//   4. renames it over `path` (a symlink at `path` is replaced, not
//      followed),
//   5. fsyncs the directory.
// Guarantees: whenever the process or the machine stops, `path` holds its
// old contents (or is missing, if it was) or all of `data`, never part of
// it: the rename in step 4 is atomic, and step 3 made the new contents
// durable before it. After a crash before step 5 completed, either may be
// there, and a leftover temporary file may remain; once the call returns
// success the new contents survive a crash. On an error before step 4 the
// temporary file is removed and `path` is untouched.
// Suspends: until step 5 is done, or an error. Only steps 1 and 2 are
// cancellable (an abort there fails with errc::aborted and changes
// nothing); the writes, syncs and the rename always run to completion.
Result<void> write_file_atomic(const std::filesystem::path& path, std::span<const std::byte> data,
                               mode_t mode = 0666);
Result<void> write_file_atomic(const std::filesystem::path& path, std::string_view data,
                               mode_t mode = 0666);

}  // namespace spindle::fs
