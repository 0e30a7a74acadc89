#include "connection_set.hpp"

#include <sys/socket.h>

#include <mutex>

namespace spindle::apps {

bool ConnectionSet::add(int fd) {
  std::lock_guard guard(lock_);
  if (stopping_) return false;
  fds_.insert(fd);
  open_.add(1);
  return true;
}

void ConnectionSet::remove(int fd) {
  std::lock_guard guard(lock_);
  if (fds_.erase(fd) != 0) open_.done();
}

std::size_t ConnectionSet::stop(Deadline deadline) {
  {
    std::lock_guard guard(lock_);
    stopping_ = true;
    for (int fd : fds_) (void)::shutdown(fd, SHUT_RD);
  }
  (void)open_.wait_until(deadline);
  std::lock_guard guard(lock_);
  return fds_.size();
}

}  // namespace spindle::apps
