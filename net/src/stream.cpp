// TcpStream: connecting (with bind-before-connect and options) and the TCP
// options; everything else is StreamSocket's.

#include "spindle/net/stream.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <utility>

#include "counters.hpp"
#include "socket_ops.hpp"
#include "spindle/sched/io.hpp"

namespace spindle::net {

Result<TcpStream> TcpStream::connect(const SocketAddress& peer, Timeout timeout) {
  return connect(peer, ConnectOptions{}, timeout);
}

Result<TcpStream> TcpStream::connect(const SocketAddress& peer, const ConnectOptions& options,
                                     Timeout timeout) {
  const Config& config = current_config();
  const Deadline deadline = timeout.deadline(config.connect_timeout);
  auto fd = detail::open_socket(peer.family(), SOCK_STREAM, IPPROTO_TCP, detail::setup_of(options));
  if (!fd) return failure(fd.error());
  if (options.local) {
    if (options.local->port() == 0) {
      // The port is chosen with the peer in view, at connect time.
      const int one = 1;
      (void)::setsockopt(fd->get(), IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
    }
    if (auto b = detail::bind_to(fd->get(), *options.local, false); !b) return failure(b.error());
  }
  if (auto r = io::connect(fd->get(), peer.data(), peer.size(), {.deadline = deadline}); !r)
    return failure(r.error());
  detail::kOutboundConnections.add();
  detail::apply_stream_options(fd->get(), config);
  return TcpStream(std::move(*fd), peer);
}

Result<void> TcpStream::set_nodelay(bool on) noexcept {
  if (!fd_) return failure(errc::closed);
  return detail::set_flag(fd_.get(), IPPROTO_TCP, TCP_NODELAY, on);
}

Result<void> TcpStream::set_keepalive(const std::optional<Keepalive>& keepalive) {
  if (keepalive) detail::check_keepalive(*keepalive);
  if (!fd_) return failure(errc::closed);
  return detail::set_keepalive(fd_.get(), keepalive ? &*keepalive : nullptr);
}

}  // namespace spindle::net
