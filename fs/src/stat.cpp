#include <dirent.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "stat_convert.hpp"

namespace spindle::fs {
namespace {

FileTime to_time(const statx_timestamp& t) noexcept {
  return FileTime(std::chrono::seconds(t.tv_sec) + std::chrono::nanoseconds(t.tv_nsec));
}

}  // namespace

const char* file_type_name(FileType type) noexcept {
  switch (type) {
    case FileType::kRegular:
      return "regular";
    case FileType::kDirectory:
      return "directory";
    case FileType::kSymlink:
      return "symlink";
    case FileType::kFifo:
      return "fifo";
    case FileType::kSocket:
      return "socket";
    case FileType::kCharDevice:
      return "character device";
    case FileType::kBlockDevice:
      return "block device";
    case FileType::kUnknown:
      break;
  }
  return "unknown";
}

namespace detail {

FileType type_of_mode(unsigned mode) noexcept {
  switch (mode & S_IFMT) {
    case S_IFREG:
      return FileType::kRegular;
    case S_IFDIR:
      return FileType::kDirectory;
    case S_IFLNK:
      return FileType::kSymlink;
    case S_IFIFO:
      return FileType::kFifo;
    case S_IFSOCK:
      return FileType::kSocket;
    case S_IFCHR:
      return FileType::kCharDevice;
    case S_IFBLK:
      return FileType::kBlockDevice;
    default:
      return FileType::kUnknown;
  }
}

FileType type_of_dirent(unsigned char d_type) noexcept {
  // DTTOIF: d_type is st_mode's type bits shifted down.
  return d_type == DT_UNKNOWN ? FileType::kUnknown : type_of_mode(DTTOIF(d_type));
}

Stat to_stat(const struct statx& st) noexcept {
  Stat s;
  s.type = type_of_mode(st.stx_mode);
  s.mode = st.stx_mode;
  s.size = st.stx_size;
  s.blocks = st.stx_blocks;
  s.block_size = st.stx_blksize;
  s.links = st.stx_nlink;
  s.uid = st.stx_uid;
  s.gid = st.stx_gid;
  s.inode = st.stx_ino;
  s.device = makedev(st.stx_dev_major, st.stx_dev_minor);
  s.accessed = to_time(st.stx_atime);
  s.modified = to_time(st.stx_mtime);
  s.changed = to_time(st.stx_ctime);
  return s;
}

}  // namespace detail
}  // namespace spindle::fs
