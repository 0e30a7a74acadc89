#include "park/event_fd.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "spindle/base/assert.hpp"

namespace spindle::detail {

EventFd::EventFd() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
  if (fd_ < 0) throw std::system_error(errno, std::system_category(), "spindle: eventfd");
}

EventFd::~EventFd() { ::close(fd_); }

// EAGAIN means the counter is at its maximum: the fd is readable anyway.
void EventFd::signal() noexcept {
  const int ret = ::eventfd_write(fd_, 1);
  SPINDLE_ASSERT(ret == 0 || errno == EAGAIN, "eventfd write failed");
}

// EAGAIN means it was not readable.
void EventFd::drain() noexcept {
  eventfd_t value = 0;
  const int ret = ::eventfd_read(fd_, &value);
  SPINDLE_ASSERT(ret == 0 || errno == EAGAIN, "eventfd read failed");
}

}  // namespace spindle::detail
