// Blob: an open blob of a Storage: positional reads and writes of its data,
// resize and sync. Every call is one or more operations on the calling
// worker's io_uring ring.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <system_error>
#include <vector>

#include "spindle/base/result.hpp"

namespace spindle::storage {

class Blob;

namespace detail {
struct BlobState;
// Test seam: makes `blob` behave as if an fdatasync had failed with `error`
// (a real writeback failure cannot be caused on demand). Fiber-only.
void inject_sync_failure_for_testing(const Blob& blob, std::error_code error);
}  // namespace detail

struct ReadOptions {
  // A hint that the bytes will not be read again soon: RWF_DONTCACHE (Linux
  // 6.14+, on filesystems that support it), silently dropped where it is not.
  bool dont_cache = false;
};

struct WriteOptions {
  // The bytes are durable when the call returns (RWF_DSYNC). Not a barrier for
  // earlier writes without it, nor for resizes: call sync() for those.
  bool sync = false;
  // As ReadOptions::dont_cache.
  bool dont_cache = false;
};

// Copyable handle; copies share one file descriptor, which closes when the
// last copy goes. Thread-safe: any number of fibers on any workers may read,
// write and sync through copies at once. Overlapping concurrent writes, or
// writes through two separate opens of one blob, leave the overlap undefined.
// Offsets count from the start of the data (the header is invisible).
// Destroying the last copy may discard what was never synced.
//
// Every call is fiber-only. Reads are cancellable (an abort of the calling
// fiber ends them with errc::aborted). Writes, resizes and syncs are never
// cancelled, not even at shutdown, which waits for them; an aborted fiber's
// write still writes all of its bytes. The calls marked `Suspends:` park the
// calling fiber (syncs and sync writes of one open also wait their turn on a
// spindle::Mutex); partition(), name() and operator bool never suspend.
class Blob {
 public:
  Blob() = default;  // an empty handle; every call on it is a bug
  explicit Blob(std::shared_ptr<detail::BlobState> state) noexcept : state_(std::move(state)) {}

  explicit operator bool() const noexcept { return state_ != nullptr; }

  // Fills `out` with the bytes at [offset, offset + out.size()): exactly that
  // many, or errc::insufficient_length if the blob ends first (`out` may then
  // hold part of them). std::errc::value_too_large if the range overflows.
  // Zero bytes: returns at once, without the ring.
  // Suspends: until the reads complete.
  Result<void> read_at(std::uint64_t offset, std::span<std::byte> out, ReadOptions o = {}) const;
  Result<void> read_at(std::uint64_t offset, std::span<char> out, ReadOptions o = {}) const {
    return read_at(offset, std::as_writable_bytes(out), o);
  }
  // The same into a new buffer of `len` bytes.
  // Suspends: until the reads complete.
  Result<std::vector<std::byte>> read(std::uint64_t offset, std::size_t len,
                                      ReadOptions o = {}) const;

  // Writes every byte of `data` at `offset`, growing the blob if needed (a
  // gap reads as zeros). Zero bytes: returns at once.
  // Suspends: until the kernel has taken every byte (and, with `sync`, made it durable).
  Result<void> write_at(std::uint64_t offset, std::span<const std::byte> data,
                        WriteOptions o = {}) const;
  Result<void> write_at(std::uint64_t offset, std::string_view data, WriteOptions o = {}) const {
    return write_at(offset, std::as_bytes(std::span(data.data(), data.size())), o);
  }
  // Vectored: the chunks back to back from `offset`, in order.
  // Suspends: as write_at.
  Result<void> write_at(std::uint64_t offset, std::span<const std::span<const std::byte>> chunks,
                        WriteOptions o = {}) const;

  // Sets the data length to `len`: truncates, or grows with zeros.
  // IORING_OP_FTRUNCATE; before Linux 6.9, ftruncate() on the blocking pool,
  // and there, unlike the rest of this class, an abort of the calling fiber
  // is seen: the call returns errc::aborted, and the truncate may have run,
  // be still running, or never run (a blocking task under an aborted fiber
  // does not start).
  // Suspends: until the kernel has done it.
  Result<void> resize(std::uint64_t len) const;

  // Makes every write and resize done so far durable (fdatasync). Syncs and
  // sync writes through one open run one at a time. A failed sync is
  // retained: every later sync or sync write of this blob fails with the same
  // error (through any open of it, until it is removed or re-created, for the
  // life of the Storage), because after a failed fdatasync the kernel may
  // have dropped the dirty pages and a second one would succeed without
  // having written them.
  // Suspends: until the sync completes.
  Result<void> sync() const;

  // The current data length.
  // Suspends: for one STATX.
  Result<std::uint64_t> size() const;

  // The partition and name this blob was opened as.
  std::string_view partition() const noexcept;
  std::string_view name() const noexcept;

 private:
  friend void detail::inject_sync_failure_for_testing(const Blob&, std::error_code);
  std::shared_ptr<detail::BlobState> state_;
};

// The result of Storage::open.
struct OpenedBlob {
  Blob blob;
  std::uint64_t len = 0;      // the data length at open
  std::uint16_t version = 0;  // the blob version recorded in its header
};

}  // namespace spindle::storage
