#include "spindle/net/unix_listener.hpp"

#include <utility>

#include "socket_ops.hpp"

namespace spindle::net {

Result<UnixListener> UnixListener::bind(const SocketAddress& addr,
                                        const UnixListenOptions& options) {
  auto fd = detail::open_listener(addr, 0, detail::setup_of(options), options.remove_stale_socket,
                                  options.backlog);
  if (!fd) return failure(fd.error());
  return UnixListener(std::move(*fd));
}

Result<UnixStream> UnixListener::accept(Timeout timeout) {
  auto c = detail::accept_connection(fd_, fd_id_, timeout);
  if (!c) return failure(c.error());
  return UnixStream(std::move(c->fd), c->peer);
}

}  // namespace spindle::net
