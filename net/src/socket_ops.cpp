#include "socket_ops.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

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

void close_fd(int fd) noexcept {
  if (fd >= 0) (void)::close(fd);
}

}  // namespace spindle::net::detail
