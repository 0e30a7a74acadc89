// Blob: positional I/O on the data region of a blob file (file offset
// kHeaderSize onwards), each call a loop of ring operations.
//
// Short reads and writes continue from where the kernel stopped. A sync write
// uses RWF_DSYNC on every SQE (each partial write is then itself durable),
// except when it needs more than one WRITEV's worth of iovecs: then it writes
// plainly and ends with one fdatasync, as the reference does. RWF_DONTCACHE
// is tried once per open and dropped for good on EOPNOTSUPP.
#include "spindle/storage/blob.hpp"

#include <linux/fs.h>

#include <algorithm>
#include <cerrno>
#include <limits>
#include <mutex>

#include "counters.hpp"
#include "spindle/storage/header.hpp"
#include "state.hpp"

namespace spindle::storage {
namespace {

constexpr std::uint64_t kMaxFileOffset = std::numeric_limits<std::int64_t>::max();

// The file offset of data offset `offset`, if [offset, offset + len) fits a file.
bool file_range(std::uint64_t offset, std::uint64_t len, std::uint64_t& file_offset) {
  if (offset > kMaxFileOffset - kHeaderSize) return false;
  file_offset = offset + kHeaderSize;
  return len <= kMaxFileOffset - file_offset;
}

bool is_eopnotsupp(const std::error_code& ec) { return ec == std::errc::operation_not_supported; }

}  // namespace

Result<void> Blob::read_at(std::uint64_t offset, std::span<std::byte> out, ReadOptions o) const {
  if (out.empty()) return {};
  std::uint64_t pos;
  if (!file_range(offset, out.size(), pos))
    return failure(std::make_error_code(std::errc::value_too_large));
  auto& s = *state_;
  std::size_t done = 0;
  while (done < out.size()) {
    const bool dont_cache =
        o.dont_cache && !s.dont_cache_unsupported.load(std::memory_order_relaxed);
    auto r =
        io::read(s.fd.get(), out.subspan(done), pos + done, dont_cache ? detail::kRwfDontCache : 0);
    if (!r) {
      if (dont_cache && is_eopnotsupp(r.error())) {
        s.dont_cache_unsupported.store(true, std::memory_order_relaxed);
        continue;
      }
      return failure(r.error());
    }
    if (*r == 0) return failure(errc::insufficient_length);
    done += *r;
  }
  detail::kReads.add();
  detail::kReadBytes.add(out.size());
  return {};
}

Result<std::vector<std::byte>> Blob::read(std::uint64_t offset, std::size_t len,
                                          ReadOptions o) const {
  std::vector<std::byte> out(len);
  if (auto r = read_at(offset, out, o); !r) return failure(r.error());
  return out;
}

Result<void> Blob::write_at(std::uint64_t offset, std::span<const std::byte> data,
                            WriteOptions o) const {
  const std::span<const std::byte> one[1] = {data};
  return write_at(offset, std::span<const std::span<const std::byte>>(one), o);
}

Result<void> Blob::write_at(std::uint64_t offset,
                            std::span<const std::span<const std::byte>> chunks,
                            WriteOptions o) const {
  // The iovecs, none longer than one write may move.
  std::vector<iovec> iov;
  std::uint64_t total = 0;
  for (auto c : chunks) {
    total += c.size();
    for (std::size_t at = 0; at < c.size(); at += io::kMaxTransfer) {
      const std::size_t n = std::min(c.size() - at, io::kMaxTransfer);
      iov.push_back({const_cast<std::byte*>(c.data() + at), n});
    }
  }
  if (total == 0) return {};
  std::uint64_t pos;
  if (!file_range(offset, total, pos))
    return failure(std::make_error_code(std::errc::value_too_large));
  auto& s = *state_;

  std::unique_lock<Mutex> sync_guard;
  const bool dsync_each = o.sync && iov.size() <= io::kMaxIovecs;
  if (o.sync) {
    sync_guard = std::unique_lock<Mutex>(s.sync_lock);
    if (s.sync_failure) return failure(s.sync_failure);
  }

  std::span<iovec> rest(iov);
  while (!rest.empty()) {
    const bool dont_cache =
        o.dont_cache && !s.dont_cache_unsupported.load(std::memory_order_relaxed);
    const int flags = (dsync_each ? RWF_DSYNC : 0) | (dont_cache ? detail::kRwfDontCache : 0);
    auto r = io::write(s.fd.get(), rest, pos, flags, detail::kWriteOptions);
    if (!r) {
      if (dont_cache && is_eopnotsupp(r.error())) {
        s.dont_cache_unsupported.store(true, std::memory_order_relaxed);
        continue;
      }
      // A sync write that failed may have left the bytes in an unknown state
      // on disk: from now on this blob cannot promise durability.
      if (o.sync) s.fail_sync(r.error());
      return failure(r.error());
    }
    // A zero-byte write of a non-empty range cannot make progress.
    if (*r == 0) {
      if (o.sync) s.fail_sync(std::make_error_code(std::errc::io_error));
      return failure(std::make_error_code(std::errc::io_error));
    }
    pos += *r;
    std::size_t n = *r;
    while (n > 0) {
      if (n >= rest.front().iov_len) {
        n -= rest.front().iov_len;
        rest = rest.subspan(1);
      } else {
        rest.front().iov_base = static_cast<std::byte*>(rest.front().iov_base) + n;
        rest.front().iov_len -= n;
        n = 0;
      }
    }
  }
  if (o.sync && !dsync_each) {
    if (auto r = io::fsync(s.fd.get(), true); !r) {
      s.fail_sync(r.error());
      return failure(r.error());
    }
  }
  detail::kWrites.add();
  detail::kWriteBytes.add(total);
  return {};
}

Result<void> Blob::resize(std::uint64_t len) const {
  std::uint64_t end;
  if (!file_range(len, 0, end)) return failure(std::make_error_code(std::errc::value_too_large));
  auto r = io::ftruncate(state_->fd.get(), end);
  if (r) detail::kResizes.add();
  return r;
}

Result<void> Blob::sync() const {
  auto& s = *state_;
  std::lock_guard<Mutex> guard(s.sync_lock);
  if (s.sync_failure) return failure(s.sync_failure);
  if (auto r = io::fsync(s.fd.get(), true); !r) {
    s.fail_sync(r.error());
    return failure(r.error());
  }
  detail::kSyncs.add();
  return {};
}

Result<std::uint64_t> Blob::size() const {
  auto r = detail::file_size(state_->fd.get());
  if (!r) return failure(r.error());
  return *r < kHeaderSize ? 0 : *r - kHeaderSize;
}

std::string_view Blob::partition() const noexcept { return state_->partition; }
std::string_view Blob::name() const noexcept { return state_->name; }

namespace detail {

void inject_sync_failure_for_testing(const Blob& blob, std::error_code error) {
  BlobState& s = *blob.state_;
  std::lock_guard<Mutex> guard(s.sync_lock);
  s.fail_sync(error);
}

}  // namespace detail
}  // namespace spindle::storage
