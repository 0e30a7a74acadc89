// Names on disk: the partition name rule, and a blob name's file name (the
// lowercase hex of its bytes). A blob lives at <directory>/<partition>/<hex(name)>.
// Pure functions on strings: thread-safe, no I/O, never suspend.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace spindle::storage {

// True if `name` is a valid partition name: non-empty, only [A-Za-z0-9_-].
// Anything else (".", "..", "/", spaces, non-ASCII) is rejected with
// errc::partition_invalid before it reaches the filesystem.
bool valid_partition_name(std::string_view name) noexcept;

// A blob's name is any non-empty byte string (std::string holds arbitrary
// bytes); its file name is their lowercase hex, two digits per byte. A file
// name is at most 255 bytes, so a blob name is at most 127 bytes.
inline constexpr std::size_t kMaxBlobNameSize = 127;
std::string blob_file_name(std::string_view name);

// The blob name a file name stands for, or nullopt unless `file` is canonical:
// non-empty, even length, only [0-9a-f] (no uppercase, no prefix, no spaces).
std::optional<std::string> blob_name_from_file(std::string_view file);

}  // namespace spindle::storage
