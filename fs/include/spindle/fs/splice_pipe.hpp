// fs::SplicePipe: the pipe that copy() and send_file() move bytes through
// (splice(2) needs a pipe at one end). Each call makes one unless it is
// given one: a caller that splices often, such as a connection serving
// many files, keeps one and saves a pipe(2) and two close(2) per call.
#pragma once

#include <cstddef>

#include "spindle/base/unique_fd.hpp"
#include "spindle/fs/error.hpp"

namespace spindle::fs {

namespace detail {
struct Pump;
struct FileCopy;
}  // namespace detail

// Fiber-only, for one call at a time. Movable while no call uses it.
class SplicePipe {
 public:
  // No pipe yet: the first call that uses it makes one of the default size.
  SplicePipe() noexcept = default;

  // A pipe of `capacity` bytes if the system allows it (F_SETPIPE_SZ, up to
  // the sysctl fs.pipe-max-size, 1 MiB by default), else the default size
  // (64 KiB): larger pipes mean fewer splices per megabyte. Errors (EMFILE,
  // ENFILE) name no path. Never suspends.
  static Result<SplicePipe> make(std::size_t capacity = 0);

  // The bytes one splice into the pipe may move (0 before the first use).
  std::size_t capacity() const noexcept { return capacity_; }

 private:
  friend struct detail::Pump;
  friend struct detail::FileCopy;

  UniqueFd read_;
  UniqueFd write_;
  std::size_t wanted_ = 0;    // make()'s capacity, for a pipe made anew
  std::size_t capacity_ = 0;  // F_GETPIPE_SZ
  // Bytes in the pipe: nonzero only after a transfer failed half way, and
  // then the pipe is made anew at its next use.
  std::size_t held_ = 0;
};

}  // namespace spindle::fs
