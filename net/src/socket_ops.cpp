#include "socket_ops.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>

namespace spindle::net::detail {

void apply_stream_options(int fd, const Config& config) noexcept {
  if (config.tcp_nodelay) {
    const int one = 1;
    (void)::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  if (config.zero_linger) {
    const linger l{.l_onoff = 1, .l_linger = 0};
    (void)::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  }
}

Result<SocketAddress> local_address(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return errno_failure(errno);
  auto a = SocketAddress::from_sockaddr(reinterpret_cast<const sockaddr*>(&ss), len);
  if (!a) return errno_failure(EAFNOSUPPORT);
  return *a;
}

}  // namespace spindle::net::detail
