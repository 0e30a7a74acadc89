#include "spindle/fs/splice_pipe.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

namespace spindle::fs {

Result<SplicePipe> SplicePipe::make(std::size_t capacity) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return detail::fail(std::error_code(errno, std::system_category()), "pipe", {});
  }
  SplicePipe p;
  p.read_.reset(fds[0]);
  p.write_.reset(fds[1]);
  p.wanted_ = capacity;
  // Refused (beyond fs.pipe-max-size, or the user's pipe pages used up):
  // the default size serves as well, in more splices.
  if (capacity > 0) (void)::fcntl(fds[1], F_SETPIPE_SZ, static_cast<int>(capacity));
  const int size = ::fcntl(fds[1], F_GETPIPE_SZ);
  if (size <= 0) return detail::fail(std::error_code(errno, std::system_category()), "pipe", {});
  p.capacity_ = static_cast<std::size_t>(size);
  return p;
}

}  // namespace spindle::fs
