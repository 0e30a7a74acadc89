// The steps of write_file_atomic (spindle/fs/whole_file.hpp), apart so a
// test can stop between them as a crash would. Private to fs/ and its tests.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>

#include "spindle/base/unique_fd.hpp"
#include "spindle/fs/error.hpp"

namespace spindle::fs::detail {

// A temporary file written and synced beside its target, not yet renamed.
struct StagedFile {
  std::filesystem::path target;
  std::filesystem::path dir_path;  // the target's directory
  UniqueFd dir;                    // open on it
  std::string temp;                // the temporary file's name in `dir`
  std::string name;                // the target's name in `dir`
};

// Steps 1 to 3: the directory opened, the temporary file created, written
// with `data` and fsynced. On an error the temporary file is removed.
Result<StagedFile> stage(const std::filesystem::path& target, std::span<const std::byte> data,
                         mode_t mode);
// Step 4: the temporary file renamed over the target. On an error it is
// removed.
Result<void> commit(const StagedFile& staged);
// Step 5: the directory fsynced, so that the rename survives a crash.
Result<void> sync_directory(const StagedFile& staged);

}  // namespace spindle::fs::detail
