#include "spindle/net/unix_datagram.hpp"

#include <sys/socket.h>

#include <utility>

#include "message.hpp"
#include "socket_ops.hpp"

namespace spindle::net {

Result<UnixDatagram> UnixDatagram::bind(const SocketAddress& addr, const UnixBindOptions& options) {
  auto fd = detail::open_socket(addr.family(), SOCK_DGRAM, 0, detail::setup_of(options));
  if (!fd) return failure(fd.error());
  if (auto r = detail::bind_to(fd->get(), addr, options.remove_stale_socket); !r)
    return failure(r.error());
  return UnixDatagram(std::move(*fd));
}

Result<UnixDatagram> UnixDatagram::unbound() {
  auto fd = detail::open_socket(AF_UNIX, SOCK_DGRAM, 0, {});
  if (!fd) return failure(fd.error());
  return UnixDatagram(std::move(*fd));
}

Result<std::pair<UnixDatagram, UnixDatagram>> UnixDatagram::pair() {
  auto fds = detail::socket_pair(SOCK_DGRAM);
  if (!fds) return failure(fds.error());
  return std::pair(UnixDatagram(std::move(fds->first)), UnixDatagram(std::move(fds->second)));
}

Result<std::size_t> UnixDatagram::send_fds(std::span<const std::byte> data,
                                           std::span<const int> fds, Timeout timeout) {
  detail::check_fd_count(fds, "UnixDatagram::send_fds");
  if (!fd_) return failure(errc::closed);
  auto limit = detail::read_write_limit(timeout);
  return detail::send_message(fd_.get(), data, fds, nullptr, detail::call_options(limit, fd_id_));
}

Result<Received> UnixDatagram::recv_fds(std::span<std::byte> buf, std::size_t max_fds,
                                        Timeout timeout) {
  if (!fd_) return failure(errc::closed);
  auto limit = detail::read_write_limit(timeout);
  return detail::receive_message(fd_.get(), buf, max_fds, detail::call_options(limit, fd_id_));
}

}  // namespace spindle::net
