// fs::read_dir: the entries of a directory. There is no io_uring operation
// for getdents, so on every backend the listing runs on the blocking pool
// while the calling fiber parks: a worker never blocks on it.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "spindle/fs/error.hpp"
#include "spindle/fs/stat.hpp"

namespace spindle::fs {

struct DirEntry {
  std::string name;  // the file name, without the directory
  // The entry's own type (a symlink is kSymlink, whatever it points to);
  // where the file system does not say, lstat says.
  FileType type = FileType::kUnknown;

  friend bool operator==(const DirEntry&, const DirEntry&) = default;
};

// Every entry of the directory `path` but "." and "..", sorted by name.
// Errors name `path`: ENOENT, ENOTDIR, EACCES, ... An abort or a deadline
// scope ends the wait with errc::aborted or errc::timed_out (the pool
// finishes the listing and drops it).
// Suspends: until the listing is done, an error, a deadline or an abort.
Result<std::vector<DirEntry>> read_dir(const std::filesystem::path& path);

}  // namespace spindle::fs
