#include "spindle/net/unix_stream.hpp"

#include <sys/socket.h>

#include <utility>

#include "counters.hpp"
#include "socket_ops.hpp"
#include "spindle/sched/io.hpp"

namespace spindle::net {

Result<UnixStream> UnixStream::connect(const SocketAddress& peer, Timeout timeout) {
  const Deadline deadline = timeout.deadline(current_config().connect_timeout);
  auto fd = detail::open_socket(peer.family(), SOCK_STREAM, 0, {});
  if (!fd) return failure(fd.error());
  if (auto r = io::connect(fd->get(), peer.data(), peer.size(), {.deadline = deadline}); !r)
    return failure(r.error());
  detail::kOutboundConnections.add();
  return UnixStream(std::move(*fd), peer);
}

Result<std::pair<UnixStream, UnixStream>> UnixStream::pair() {
  auto fds = detail::socket_pair(SOCK_STREAM);
  if (!fds) return failure(fds.error());
  const SocketAddress unnamed = SocketAddress::unix_unnamed();
  return std::pair(UnixStream(std::move(fds->first), unnamed),
                   UnixStream(std::move(fds->second), unnamed));
}

Result<void> UnixStream::send_fds(std::span<const std::byte> data, std::span<const int> fds,
                                  Timeout timeout) {
  return send_with_fds(data, fds, timeout);
}

Result<Received> UnixStream::recv_fds(std::span<std::byte> buf, std::size_t max_fds,
                                      Timeout timeout) {
  return recv_with_fds(buf, max_fds, timeout);
}

}  // namespace spindle::net
