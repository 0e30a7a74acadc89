// EventFd: a non-blocking eventfd by which any thread ends a worker's block
// inside its I/O backend (io_uring_enter or epoll_wait), where the futex
// cannot reach it.
#pragma once

namespace spindle::detail {

// signal() is thread-safe; drain() is the owning worker's. Nothing here
// blocks.
class EventFd {
 public:
  EventFd();  // throws std::system_error if eventfd() fails
  ~EventFd();
  EventFd(const EventFd&) = delete;
  EventFd& operator=(const EventFd&) = delete;

  // Makes the fd readable; a no-op if it already is. One write(2).
  void signal() noexcept;
  // Makes it unreadable again, so the next signal() is a new edge for a poll.
  void drain() noexcept;
  int fd() const noexcept { return fd_; }

 private:
  int fd_;
};

}  // namespace spindle::detail
