// Storage: the directory, its .hold lock, the startup syncfs, and the
// metadata operations (open with creation and torn-creation healing, remove,
// scan).
//
// Creating a blob (the reference's order, so that a parseable header implies
// durable directory entries):
//   1. MKDIRAT the partition (EEXIST is fine).
//   2. OPENAT the file read-write with O_CREAT and without O_TRUNC.
//   3. STATX and READ what is there. A valid header: done (check the version).
//      Nothing, or the bytes of a creation cut short (a prefix of a canonical
//      header followed by zeros, the whole file at most 4096 bytes): go on.
//      Anything else is corruption, reported loudly and left untouched.
//   4. fsync the partition directory, then the storage directory.
//   5. FTRUNCATE to 0, WRITE the 4096-byte header, fsync the file.
// A crash anywhere in 4-5 leaves a torn creation, which step 3 heals on the
// next open.
#include "spindle/storage/storage.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <mutex>
#include <utility>

#include "file_ops.hpp"
#include "spindle/base/lock_guard.hpp"
#include "spindle/sched/context.hpp"
#include "spindle/sched/log.hpp"
#include "spindle/storage/partition.hpp"
#include "state.hpp"

namespace spindle::storage {
namespace detail {

void StorageState::record_failure(std::string_view key, std::error_code ec) {
  LockGuard g(failures_lock);
  auto it = failures.find(key);
  if (it == failures.end()) {
    failures.emplace(std::string(key), ec);
  } else if (!it->second) {
    it->second = ec;
  }
}

std::error_code StorageState::failure_of(std::string_view key) {
  LockGuard g(failures_lock);
  auto it = failures.find(key);
  return it == failures.end() ? std::error_code{} : it->second;
}

void StorageState::clear_failure(std::string_view key) {
  LockGuard g(failures_lock);
  if (auto it = failures.find(key); it != failures.end()) failures.erase(it);
}

void StorageState::clear_partition_failures(std::string_view partition) {
  const std::string prefix = std::string(partition) + "/";
  LockGuard g(failures_lock);
  auto it = failures.lower_bound(prefix);
  while (it != failures.end() && it->first.starts_with(prefix)) it = failures.erase(it);
}

}  // namespace detail

namespace {

std::unexpected<std::error_code> fail(std::errc e) { return failure(std::make_error_code(e)); }

// A directory entry as the blocking pool saw it.
struct Entry {
  std::string name;
  bool regular = false;
  bool directory = false;
};
struct Listing {
  int error = 0;  // errno of opening the directory
  std::vector<Entry> entries;
};

// Lists <dir>/<partition> on the blocking pool (there is no ring opcode for
// getdents). The task owns what it uses, since an aborted caller stops waiting.
Result<std::vector<Entry>> list_partition(const std::shared_ptr<detail::StorageState>& st,
                                          std::string partition) {
  auto task = spawn_blocking([st, partition = std::move(partition)]() {
    Listing out;
    const int fd =
        ::openat(st->dir_fd.get(), partition.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
      out.error = errno;
      return out;
    }
    DIR* d = ::fdopendir(fd);
    if (!d) {
      out.error = errno;
      ::close(fd);
      return out;
    }
    while (dirent* e = ::readdir(d)) {
      const std::string_view n = e->d_name;
      if (n == "." || n == "..") continue;
      Entry entry{std::string(n)};
      unsigned char type = e->d_type;
      if (type == DT_UNKNOWN) {
        struct stat sb{};
        if (::fstatat(::dirfd(d), e->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0) {
          type = S_ISREG(sb.st_mode) ? DT_REG : S_ISDIR(sb.st_mode) ? DT_DIR : DT_UNKNOWN;
        }
      }
      entry.regular = type == DT_REG;
      entry.directory = type == DT_DIR;
      out.entries.push_back(std::move(entry));
    }
    ::closedir(d);
    return out;
  });
  auto r = task.join();
  if (!r) return failure(r.error());
  if (r->error == ENOENT || r->error == ENOTDIR) return failure(errc::partition_missing);
  if (r->error != 0) return errno_failure(r->error);
  return std::move(r->entries);
}

bool valid_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t extra;
    if (c < 0x80) {
      extra = 0;
    } else if ((c >> 5) == 0x6) {
      extra = 1;
    } else if ((c >> 4) == 0xE) {
      extra = 2;
    } else if ((c >> 3) == 0x1E) {
      extra = 3;
    } else {
      return false;
    }
    if (s.size() - i - 1 < extra) return false;
    for (std::size_t k = 1; k <= extra; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 0x2) return false;
    }
    i += extra + 1;
  }
  return true;
}

// Reads up to kHeaderSize bytes from the start of the file (fewer at EOF).
Result<std::size_t> read_head(int fd, HeaderBytes& bytes, std::size_t want) {
  std::size_t have = 0;
  while (have < want) {
    auto r = io::read(fd, std::span(bytes).subspan(have, want - have), have);
    if (!r) return failure(r.error());
    if (*r == 0) break;
    have += *r;
  }
  return have;
}

Result<void> write_header(int fd, std::uint16_t version) {
  const HeaderBytes h = encode_header(version);
  std::size_t done = 0;
  while (done < h.size()) {
    iovec v{const_cast<std::byte*>(h.data() + done), h.size() - done};
    auto r = io::write(fd, std::span(&v, 1), done, 0, detail::kWriteOptions);
    if (!r) return failure(r.error());
    if (*r == 0) return fail(std::errc::io_error);
    done += *r;
  }
  return {};
}

}  // namespace

Result<Storage> Storage::open_directory(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::path dir = std::filesystem::absolute(path, ec).lexically_normal();
  if (ec) return failure(ec);
  if (dir.has_relative_path() && !dir.has_filename()) dir = dir.parent_path();  // "a/b/" -> "a/b"

  // mkdir -p, one MKDIRAT per component; the syncfs below makes new ones durable.
  std::filesystem::path prefix;
  for (const auto& part : dir) {
    prefix /= part;
    if (prefix == prefix.root_path()) continue;
    auto r = io::mkdirat(AT_FDCWD, prefix.c_str(), 0755);
    if (!r && r.error() != std::errc::file_exists) return failure(r.error());
  }

  auto st = std::make_shared<detail::StorageState>();
  st->dir = dir;
  auto dir_fd = detail::open_at(AT_FDCWD, dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (!dir_fd) return failure(dir_fd.error());
  st->dir_fd = std::move(*dir_fd);
  auto hold = detail::open_at(st->dir_fd.get(), ".hold", O_RDWR | O_CREAT, 0644);
  if (!hold) return failure(hold.error());
  st->hold_fd = std::move(*hold);
  // Non-blocking: it fails at once if the lock is taken.
  if (::flock(st->hold_fd.get(), LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    if (err == EWOULDBLOCK) return fail(std::errc::device_or_resource_busy);
    return errno_failure(err);
  }

  // Whatever is in the directory may be in the page cache only, written by a
  // process that crashed: make it durable before anyone reads it.
  auto synced =
      spawn_blocking([st]() -> int { return ::syncfs(st->dir_fd.get()) == 0 ? 0 : errno; });
  auto r = synced.join();
  if (!r) return failure(r.error());
  if (*r != 0) return errno_failure(*r);

  return Storage(std::move(st));
}

const std::filesystem::path& Storage::directory() const noexcept { return state_->dir; }

Result<OpenedBlob> Storage::open(std::string_view partition, std::string_view name,
                                 VersionRange versions) const {
  if (!valid_partition_name(partition)) return failure(errc::partition_invalid);
  if (name.empty() || name.size() > kMaxBlobNameSize || versions.min > versions.max)
    return fail(std::errc::invalid_argument);
  detail::StorageState& st = *state_;
  const std::string part(partition);
  const std::string file = part + "/" + blob_file_name(name);
  std::lock_guard<Mutex> meta(st.meta);

  if (auto r = io::mkdirat(st.dir_fd.get(), part.c_str(), 0755);
      !r && r.error() != std::errc::file_exists)
    return failure(r.error());
  auto fd = detail::open_at(st.dir_fd.get(), file.c_str(), O_RDWR | O_CREAT, 0644);
  if (!fd) return failure(fd.error());
  auto raw = detail::file_size(fd->get());
  if (!raw) return failure(raw.error());
  HeaderBytes bytes{};
  auto have = read_head(fd->get(), bytes,
                        static_cast<std::size_t>(std::min<std::uint64_t>(*raw, kHeaderSize)));
  if (!have) return failure(have.error());

  auto make = [&](std::uint64_t len, std::uint16_t version) {
    auto b = std::make_shared<detail::BlobState>();
    b->storage = state_;
    b->partition = part;
    b->name = std::string(name);
    b->key = file;
    b->fd = std::move(*fd);
    b->sync_failure = st.failure_of(file);
    return OpenedBlob{Blob(std::move(b)), len, version};
  };
  auto corrupt = [&](std::string_view why) {
    runtime_log(LogLevel::kWarning,
                fmt::format("storage: blob {} in {} is corrupt: {}", file, st.dir.string(), why));
    return failure(errc::blob_corrupt);
  };

  const std::span<const std::byte> head(bytes.data(), *have);
  if (*have == kHeaderSize) {
    auto v = parse_header(head);
    if (v) {
      if (!versions.contains(*v)) return failure(errc::version_mismatch);
      return make(*raw - kHeaderSize, *v);
    }
    if (*raw > kHeaderSize || !is_torn_creation(head)) return corrupt(describe(v.error()));
  } else if (!is_torn_creation(head)) {
    return corrupt(describe(HeaderDefect::kTooShort));
  }
  if (*raw > 0) {
    runtime_log(LogLevel::kWarning,
                fmt::format("storage: blob {} in {} was cut short while being created ({} bytes); "
                            "re-creating it",
                            file, st.dir.string(), *raw));
  }

  // The directory entries first, so that a complete header implies them.
  if (auto r = detail::sync_directory(st.dir_fd.get(), part.c_str()); !r) return failure(r.error());
  if (auto r = io::fsync(st.dir_fd.get(), false); !r) return failure(r.error());
  if (auto r = io::ftruncate(fd->get(), 0); !r) return failure(r.error());
  if (auto r = write_header(fd->get(), versions.max); !r) return failure(r.error());
  st.clear_failure(file);  // a new blob starts clean
  if (auto r = io::fsync(fd->get(), false); !r) {
    // The header is complete: the failure stays with the blob.
    st.record_failure(file, r.error());
    return failure(r.error());
  }
  return make(0, versions.max);
}

Result<void> Storage::remove(std::string_view partition, std::string_view name) const {
  if (!valid_partition_name(partition)) return failure(errc::partition_invalid);
  if (name.empty() || name.size() > kMaxBlobNameSize) return fail(std::errc::invalid_argument);
  detail::StorageState& st = *state_;
  const std::string part(partition);
  const std::string file = part + "/" + blob_file_name(name);
  std::lock_guard<Mutex> meta(st.meta);
  if (auto r = io::unlinkat(st.dir_fd.get(), file.c_str(), 0); !r) {
    if (r.error() == std::errc::no_such_file_or_directory) return failure(errc::blob_missing);
    return failure(r.error());
  }
  st.clear_failure(file);
  return detail::sync_directory(st.dir_fd.get(), part.c_str());
}

Result<void> Storage::remove(std::string_view partition) const {
  if (!valid_partition_name(partition)) return failure(errc::partition_invalid);
  detail::StorageState& st = *state_;
  const std::string part(partition);
  std::lock_guard<Mutex> meta(st.meta);
  auto entries = list_partition(state_, part);
  if (!entries) return failure(entries.error());
  for (const Entry& e : *entries) {
    const std::string path = part + "/" + e.name;
    auto r = io::unlinkat(st.dir_fd.get(), path.c_str(), e.directory ? AT_REMOVEDIR : 0);
    if (!r && r.error() == std::errc::directory_not_empty) {
      // Not ours (a partition holds only files), but removing the partition
      // removes it too: recursively, on the blocking pool.
      auto all = spawn_blocking([full = st.dir / path]() {
        std::error_code ec;
        std::filesystem::remove_all(full, ec);
        return ec;
      });
      auto done = all.join();
      if (!done) return failure(done.error());
      if (*done) return failure(*done);
      continue;
    }
    if (!r && r.error() != std::errc::no_such_file_or_directory) return failure(r.error());
  }
  if (auto r = io::unlinkat(st.dir_fd.get(), part.c_str(), AT_REMOVEDIR); !r) {
    if (r.error() == std::errc::no_such_file_or_directory) return failure(errc::partition_missing);
    return failure(r.error());
  }
  st.clear_partition_failures(part);
  return io::fsync(st.dir_fd.get(), false);
}

Result<std::vector<std::string>> Storage::scan(std::string_view partition) const {
  if (!valid_partition_name(partition)) return failure(errc::partition_invalid);
  detail::StorageState& st = *state_;
  std::lock_guard<Mutex> meta(st.meta);
  auto entries = list_partition(state_, std::string(partition));
  if (!entries) return failure(entries.error());
  std::vector<std::string> names;
  names.reserve(entries->size());
  for (const Entry& e : *entries) {
    if (!valid_utf8(e.name)) continue;  // as the reference: such a name is skipped
    auto name = blob_name_from_file(e.name);
    if (!e.regular || !name) {
      fmt::print(
          stderr, "spindle storage: partition {} in {} is corrupt: {} '{}'\n", partition,
          st.dir.string(),
          e.regular ? "a file name that is not canonical hex" : "an entry that is not a file",
          e.name);
      return failure(errc::partition_corrupt);
    }
    names.push_back(std::move(*name));
  }
  return names;
}

}  // namespace spindle::storage
