// statx(2) results and directory entry types as fs::Stat and fs::FileType.
// Private to fs/.
#pragma once

#include <linux/stat.h>

#include "spindle/fs/stat.hpp"

namespace spindle::fs::detail {

// What every stat of fs/ asks statx for.
inline constexpr unsigned kStatMask = STATX_BASIC_STATS;

// The type of an st_mode.
FileType type_of_mode(unsigned mode) noexcept;
// The type of a dirent's d_type (kUnknown for DT_UNKNOWN).
FileType type_of_dirent(unsigned char d_type) noexcept;
Stat to_stat(const struct statx& st) noexcept;

}  // namespace spindle::fs::detail
