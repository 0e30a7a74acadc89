// What the file workloads write before measuring: a temporary directory,
// and files of stamped 4 KiB blocks that a read of the wrong place or a torn
// block cannot pass for right.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string_view>

namespace spindle::perf {

inline constexpr std::size_t kBlock = 4096;

// Data block b (the b-th 4 KiB of the data) starts with b and ends with ~b.
void stamp(std::byte* block, std::uint64_t b);
bool stamped(const std::byte* block, std::uint64_t b);

// A new directory under $TMPDIR (default /var/tmp), removed with everything
// in it on destruction. Throws std::system_error if it cannot be made.
class ScratchDir {
 public:
  ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir();
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

// Creates `file` (it must not exist) with `header`, then `bytes` (a multiple
// of kBlock) of stamped blocks, block 0 first; fdatasyncs it, so no
// writeback of it runs later; and reads the blocks back once, into the page
// cache, checking each. `what` names the workload in the errors: a failed
// call throws std::system_error, a wrong block PerfError.
void make_stamped_file(const std::filesystem::path& file, std::span<const std::byte> header,
                       std::uint64_t bytes, std::string_view what);

// Writes `text` to `file`, replacing it. Throws PerfError naming `what` and
// the file if it cannot.
void write_text_file(const std::filesystem::path& file, std::string_view text,
                     std::string_view what);

}  // namespace spindle::perf
