// Storage: a directory of partitions of blobs, durable across crashes. Holds
// the directory's exclusive .hold lock while any handle to it (or a blob of
// it) lives, and makes everything already in the directory durable (syncfs)
// before the first open.
//
// Layout: <directory>/<partition>/<lowercase hex of the blob name>; each blob
// file starts with the 4096-byte header of header.hpp.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "spindle/base/result.hpp"
#include "spindle/storage/blob.hpp"
#include "spindle/storage/header.hpp"

namespace spindle::storage {

namespace detail {
struct StorageState;
}

// Copyable handle, thread-safe; every call is fiber-only. Metadata operations
// (open, remove, scan) of one Storage run one at a time: each holds a
// spindle::Mutex, so a fiber waiting its turn parks (and abort does not end
// that wait). Every file operation goes through the calling worker's ring
// (OPENAT, STATX, MKDIRAT, UNLINKAT, FTRUNCATE, FSYNC, READ, WRITE); the
// blocking pool runs what has no ring opcode: the directory listings of scan
// and of remove(partition), removing a foreign subdirectory found in a
// partition, the startup syncfs, and ftruncate before Linux 6.9. The .hold
// lock is one non-blocking flock(). The calls marked `Suspends:` park the
// calling fiber; directory() never suspends.
class Storage {
 public:
  // Creates `dir` (and its parents) if missing, takes its exclusive .hold
  // lock and syncfs()es its filesystem, so that whatever the caller reads now
  // survives a crash. std::errc::device_or_resource_busy if another Storage
  // (in this process or another) holds the directory.
  // Suspends: for the directory operations and the syncfs.
  static Result<Storage> open_directory(const std::filesystem::path& dir);

  // Opens blob `name` of `partition`, creating the partition and the blob if
  // needed. A new blob is stamped with versions.max and made durable with its
  // directory entries before this returns. An existing blob's version must be
  // in `versions` (else errc::version_mismatch). A blob whose creation was cut
  // short by a crash is re-created, with a warning on stderr; any other damage
  // to the header is errc::blob_corrupt, also reported on stderr.
  // Errors: errc::partition_invalid; std::errc::invalid_argument for an empty
  // or too long name or an empty range; the kernel's errno.
  // Opening a name twice gives two independent opens of the same file.
  // Suspends: for the ring operations (a creation includes three fsyncs).
  Result<OpenedBlob> open(std::string_view partition, std::string_view name,
                          VersionRange versions = {}) const;

  // Removes one blob (errc::blob_missing if absent), durably: the partition
  // directory is fsynced. Open handles to it stay usable for reading; a later
  // open of the name creates a new, independent blob.
  // Suspends: for the unlink and the fsync.
  Result<void> remove(std::string_view partition, std::string_view name) const;
  // Removes a whole partition (errc::partition_missing if absent), durably.
  // Suspends: for the listing, the unlinks and the fsync.
  Result<void> remove(std::string_view partition) const;

  // The names of the partition's blobs, in no particular order.
  // errc::partition_missing; errc::partition_corrupt if it holds anything that
  // is not a blob file with a canonical hex name (names that are not UTF-8
  // are skipped, as in the reference).
  // Suspends: while the blocking pool lists the directory.
  Result<std::vector<std::string>> scan(std::string_view partition) const;

  const std::filesystem::path& directory() const noexcept;

  explicit Storage(std::shared_ptr<detail::StorageState> state) noexcept
      : state_(std::move(state)) {}

 private:
  std::shared_ptr<detail::StorageState> state_;
};

}  // namespace spindle::storage
