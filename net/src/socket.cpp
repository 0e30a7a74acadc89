#include "spindle/net/socket.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <utility>

#include "socket_ops.hpp"
#include "spindle/sched/io.hpp"

namespace spindle::net {

Socket::Socket(UniqueFd fd) noexcept : fd_(std::move(fd)), fd_id_(io::new_fd_id()) {}

Result<SocketAddress> Socket::local_addr() const {
  if (!fd_) return failure(errc::closed);
  return detail::local_address(fd_.get());
}

Result<void> Socket::set_buffer_sizes(BufferSizes sizes) {
  detail::check_buffer_sizes(sizes);
  if (!fd_) return failure(errc::closed);
  return detail::set_buffer_sizes(fd_.get(), sizes);
}

Result<BufferSizes> Socket::buffer_sizes() const {
  if (!fd_) return failure(errc::closed);
  int send = 0;
  int receive = 0;
  socklen_t len = sizeof send;
  if (::getsockopt(fd_.get(), SOL_SOCKET, SO_SNDBUF, &send, &len) != 0) return errno_failure(errno);
  len = sizeof receive;
  if (::getsockopt(fd_.get(), SOL_SOCKET, SO_RCVBUF, &receive, &len) != 0)
    return errno_failure(errno);
  return BufferSizes{.send = static_cast<std::size_t>(send),
                     .receive = static_cast<std::size_t>(receive)};
}

}  // namespace spindle::net
