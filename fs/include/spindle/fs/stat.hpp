// fs::Stat: what statx(2) says of a file (File::stat, fs::stat, fs::lstat),
// and fs::FileType, also the type of a directory entry. Plain value types;
// nothing here suspends.
#pragma once

#include <chrono>
#include <cstdint>

namespace spindle::fs {

enum class FileType : std::uint8_t {
  kUnknown,  // a type the file system did not say
  kRegular,
  kDirectory,
  kSymlink,
  kFifo,
  kSocket,
  kCharDevice,
  kBlockDevice,
};

// "regular", "directory", ...: for messages.
const char* file_type_name(FileType type) noexcept;

// A statx timestamp: nanoseconds since the Unix epoch.
using FileTime = std::chrono::sys_time<std::chrono::nanoseconds>;

struct Stat {
  FileType type = FileType::kUnknown;
  // st_mode: the type bits and the permission bits (mode & 07777).
  std::uint32_t mode = 0;
  std::uint64_t size = 0;        // bytes
  std::uint64_t blocks = 0;      // 512-byte blocks allocated
  std::uint32_t block_size = 0;  // the preferred I/O size
  std::uint32_t links = 0;
  std::uint32_t uid = 0;
  std::uint32_t gid = 0;
  std::uint64_t inode = 0;
  std::uint64_t device = 0;  // makedev() of the file system's device
  FileTime accessed{};
  FileTime modified{};
  FileTime changed{};  // the inode's last change

  bool is_regular() const noexcept { return type == FileType::kRegular; }
  bool is_directory() const noexcept { return type == FileType::kDirectory; }
  bool is_symlink() const noexcept { return type == FileType::kSymlink; }
  std::uint32_t permissions() const noexcept { return mode & 07777; }
};

}  // namespace spindle::fs
