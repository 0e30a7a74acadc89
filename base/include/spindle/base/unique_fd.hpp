// UniqueFd: the owner of one file descriptor.
#pragma once

#include <unistd.h>

#include <utility>

namespace spindle {

// Move-only; closes its descriptor with a plain close(), which does not block
// on a socket without SO_LINGER or on a local file, so it is safe in
// destructors and off fibers. Not thread-safe.
class UniqueFd {
 public:
  UniqueFd() noexcept = default;
  explicit UniqueFd(int fd) noexcept : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) reset(o.release());
    return *this;
  }
  ~UniqueFd() { reset(); }

  int get() const noexcept { return fd_; }
  explicit operator bool() const noexcept { return fd_ >= 0; }
  // Gives up ownership: the caller closes the result.
  int release() noexcept { return std::exchange(fd_, -1); }
  // Closes the descriptor held, if any, and holds `fd`.
  void reset(int fd = -1) noexcept {
    if (const int old = std::exchange(fd_, fd); old >= 0) (void)::close(old);
  }

 private:
  int fd_ = -1;
};

}  // namespace spindle
