// File: opening, closing, and the calls on the file as a whole (syncs,
// space, size, stat, position). The transfers are in file_io.cpp.
#include "spindle/fs/file.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <linux/stat.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <utility>

#include "io_options.hpp"
#include "stat_convert.hpp"

namespace spindle::fs {

File::File(UniqueFd fd, std::filesystem::path name) noexcept
    : fd_(std::move(fd)), path_(std::move(name)) {}

Result<File> File::open(const std::filesystem::path& path, Open open, mode_t mode) {
  return File::open(path, open_flags(open), mode);
}

Result<File> File::open(const std::filesystem::path& path, int flags, mode_t mode) {
  auto fd = io::openat(AT_FDCWD, path.c_str(), flags, mode);
  if (!fd) return detail::fail(fd.error(), "open", path);
  return File(UniqueFd(*fd), path);
}

Result<File> File::open_beneath(const File& dir, const std::filesystem::path& path, int flags,
                                mode_t mode) {
  // openat2 refuses a mode (EINVAL) where nothing is created.
  const bool creates = (flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE;
  const open_how how{.flags = static_cast<std::uint64_t>(static_cast<unsigned>(flags)),
                     .mode = creates ? mode : 0u,
                     .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS};
  auto fd = io::openat2(dir.native_handle(), path.c_str(), how);
  std::filesystem::path name = dir.path() / path;
  if (!fd) return detail::fail(fd.error(), "open", std::move(name));
  return File(UniqueFd(*fd), std::move(name));
}

Result<File> File::create(const std::filesystem::path& path, mode_t mode) {
  return File::open(path, Open::kWrite | Open::kCreate | Open::kTruncate, mode);
}

Result<void> File::fsync() {
  if (auto r = io::fsync(fd_.get(), false); !r) return fail(r.error(), "fsync");
  return {};
}

Result<void> File::fdatasync() {
  if (auto r = io::fsync(fd_.get(), true); !r) return fail(r.error(), "fdatasync");
  return {};
}

Result<void> File::fallocate(int mode, std::uint64_t offset, std::uint64_t length) {
  if (auto r = io::fallocate(fd_.get(), mode, offset, length); !r) {
    return fail(r.error(), "fallocate");
  }
  return {};
}

Result<void> File::truncate(std::uint64_t length) {
  if (auto r = io::ftruncate(fd_.get(), length); !r) return fail(r.error(), "truncate");
  return {};
}

Result<Stat> File::stat() const {
  struct statx st{};
  if (auto r = io::statx(fd_.get(), "", AT_EMPTY_PATH, detail::kStatMask, &st); !r) {
    return fail(r.error(), "stat");
  }
  return detail::to_stat(st);
}

Result<Stat> File::stat_cached() const {
  struct statx st{};
  if (::statx(fd_.get(), "", AT_EMPTY_PATH | AT_STATX_DONT_SYNC, detail::kStatMask, &st) != 0) {
    return fail(std::error_code(errno, std::system_category()), "stat");
  }
  return detail::to_stat(st);
}

Result<std::uint64_t> File::seek(std::int64_t offset, int whence) {
  const off_t at = ::lseek(fd_.get(), static_cast<off_t>(offset), whence);
  if (at < 0) return fail(std::error_code(errno, std::system_category()), "seek");
  return static_cast<std::uint64_t>(at);
}

Result<void> File::close() {
  const int fd = fd_.release();
  if (fd < 0) return fail(std::make_error_code(std::errc::bad_file_descriptor), "close");
  // Linux frees the descriptor even when close fails: never retried.
  if (::close(fd) != 0 && errno != EINTR) {
    return fail(std::error_code(errno, std::system_category()), "close");
  }
  return {};
}

}  // namespace spindle::fs
