// The shared state behind Storage and Blob handles. Private to storage/.
#pragma once

#include <atomic>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <system_error>

#include "counters.hpp"
#include "file_ops.hpp"
#include "spindle/base/spinlock.hpp"
#include "spindle/base/thread_annotations.hpp"
#include "spindle/sched/mutex.hpp"

namespace spindle::storage::detail {

// One Storage's directory. Thread-safe.
struct StorageState {
  std::filesystem::path dir;
  UniqueFd dir_fd;   // the directory itself (O_DIRECTORY), for *at() calls and fsync
  UniqueFd hold_fd;  // <dir>/.hold, flock()ed exclusively for the life of this state

  // Serializes open, remove and scan: a creation truncates the file, which
  // must not race another open of the same name.
  Mutex meta;

  // Retained sync failures, by blob key ("<partition>/<hex name>"). A sync
  // records its failure here; an open picks it up; remove and re-creation
  // clear it. A few map operations under the lock, never a park nor a wake.
  spindle::detail::PlainSpinLock failures_lock;
  std::map<std::string, std::error_code, std::less<>> failures SPINDLE_GUARDED_BY(failures_lock);

  void record_failure(std::string_view key, std::error_code ec) SPINDLE_EXCLUDES(failures_lock);
  std::error_code failure_of(std::string_view key) SPINDLE_EXCLUDES(failures_lock);
  void clear_failure(std::string_view key) SPINDLE_EXCLUDES(failures_lock);
  void clear_partition_failures(std::string_view partition) SPINDLE_EXCLUDES(failures_lock);
};

// One open of one blob; shared by the copies of its Blob handle. Thread-safe.
struct BlobState {
  std::shared_ptr<StorageState> storage;  // keeps the directory locked
  std::string partition;
  std::string name;
  std::string key;  // "<partition>/<hex name>"
  UniqueFd fd;
  // runtime_open_blobs: +1 while this open lives.
  RuntimeGauge::Hold open_blob{kOpenBlobs};
  // Set once RWF_DONTCACHE came back EOPNOTSUPP: the hint is dropped from then on.
  std::atomic<bool> dont_cache_unsupported{false};
  // Serializes this open's syncs and sync writes, so that each sees the
  // result of the one before (the kernel reports a writeback error to one
  // fsync per file description only).
  Mutex sync_lock;
  std::error_code sync_failure;  // guarded by sync_lock; retained until remove

  // Records a failed sync (caller holds sync_lock).
  void fail_sync(std::error_code ec) {
    sync_failure = ec;
    storage->record_failure(key, ec);
  }
};

}  // namespace spindle::storage::detail
