#include "spindle/net/udp.hpp"

#include <netinet/in.h>
#include <sys/socket.h>

#include <utility>

#include "socket_ops.hpp"

namespace spindle::net {

Result<UdpSocket> UdpSocket::bind(const SocketAddress& addr, const UdpOptions& options) {
  auto fd = detail::open_socket(addr.family(), SOCK_DGRAM, IPPROTO_UDP, detail::setup_of(options));
  if (!fd) return failure(fd.error());
  if (auto r = detail::bind_to(fd->get(), addr, false); !r) return failure(r.error());
  return UdpSocket(std::move(*fd));
}

Result<void> UdpSocket::set_broadcast(bool on) {
  if (!fd_) return failure(errc::closed);
  return detail::set_flag(fd_.get(), SOL_SOCKET, SO_BROADCAST, on);
}

}  // namespace spindle::net
