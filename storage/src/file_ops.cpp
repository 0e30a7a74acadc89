#include "file_ops.hpp"

#include <fcntl.h>
#include <linux/stat.h>
#include <sys/stat.h>

namespace spindle::storage::detail {

Result<UniqueFd> open_at(int dirfd, const char* path, int flags, mode_t mode) {
  auto r = io::openat(dirfd, path, flags, mode);
  if (!r) return failure(r.error());
  return UniqueFd(*r);
}

Result<std::uint64_t> file_size(int fd) {
  struct statx st{};
  if (auto r = io::statx(fd, "", AT_EMPTY_PATH, STATX_SIZE, &st); !r) return failure(r.error());
  return st.stx_size;
}

Result<void> sync_directory(int dirfd, const char* path) {
  auto dir = open_at(dirfd, path, O_RDONLY | O_DIRECTORY);
  if (!dir) return failure(dir.error());
  return io::fsync(dir->get(), false);
}

}  // namespace spindle::storage::detail
