// fs::Open: how File::open opens a file, a bitmask of open(2)'s access,
// creation, truncation and append flags (File::open also takes raw O_*
// flags). Constants and constexpr operators; nothing here suspends.
#pragma once

#include <fcntl.h>

namespace spindle::fs {

enum class Open : unsigned {
  kRead = 1u << 0,   // O_RDONLY; with kWrite, O_RDWR
  kWrite = 1u << 1,  // O_WRONLY; with kRead, O_RDWR
  kReadWrite = kRead | kWrite,
  kCreate = 1u << 2,     // O_CREAT: made if missing, with File::open's mode
  kExclusive = 1u << 3,  // O_EXCL: with kCreate, EEXIST if the file exists
  kTruncate = 1u << 4,   // O_TRUNC: emptied on opening
  kAppend = 1u << 5,     // O_APPEND, and kWrite: every write goes to the end
};

constexpr Open operator|(Open a, Open b) noexcept {
  return static_cast<Open>(static_cast<unsigned>(a) | static_cast<unsigned>(b));
}
constexpr Open operator&(Open a, Open b) noexcept {
  return static_cast<Open>(static_cast<unsigned>(a) & static_cast<unsigned>(b));
}
constexpr Open& operator|=(Open& a, Open b) noexcept { return a = a | b; }

// Whether `set` holds every flag of `flags`.
constexpr bool has(Open set, Open flags) noexcept { return (set & flags) == flags; }

// The open(2) flags of `open` (File::open adds O_CLOEXEC). Without kWrite
// or kAppend the file opens read-only.
constexpr int open_flags(Open open) noexcept {
  const bool write = has(open, Open::kWrite) || has(open, Open::kAppend);
  int flags = !write ? O_RDONLY : has(open, Open::kRead) ? O_RDWR : O_WRONLY;
  if (has(open, Open::kCreate)) flags |= O_CREAT;
  if (has(open, Open::kExclusive)) flags |= O_EXCL;
  if (has(open, Open::kTruncate)) flags |= O_TRUNC;
  if (has(open, Open::kAppend)) flags |= O_APPEND;
  return flags;
}

}  // namespace spindle::fs
