#include "spindle/net/listener.hpp"

#include <netinet/in.h>

#include <utility>

#include "socket_ops.hpp"

namespace spindle::net {

Result<TcpListener> TcpListener::bind(const SocketAddress& addr, const ListenOptions& options) {
  auto fd =
      detail::open_listener(addr, IPPROTO_TCP, detail::setup_of(options), false, options.backlog);
  if (!fd) return failure(fd.error());
  return TcpListener(std::move(*fd));
}

Result<TcpStream> TcpListener::accept(Timeout timeout) {
  auto c = detail::accept_connection(fd_, fd_id_, timeout);
  if (!c) return failure(c.error());
  detail::apply_stream_options(c->fd.get(), current_config());
  return TcpStream(std::move(c->fd), c->peer);
}

}  // namespace spindle::net
