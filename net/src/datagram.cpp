// DatagramSocket: each send and receive is one io::send, sendmsg or recvmsg
// on the calling worker's backend; a timeout or abort cancels it and waits
// for the cancellation to be confirmed, so a datagram is received whole or
// not at all, and nothing is poisoned.

#include "spindle/net/datagram.hpp"

#include <sys/socket.h>

#include <cerrno>

#include "message.hpp"
#include "socket_ops.hpp"
#include "spindle/sched/io.hpp"

namespace spindle::net {

Result<void> DatagramSocket::connect(const SocketAddress& peer) {
  if (!fd_) return failure(errc::closed);
  if (::connect(fd_.get(), peer.data(), peer.size()) != 0) return errno_failure(errno);
  return {};
}

Result<SocketAddress> DatagramSocket::peer_addr() const {
  if (!fd_) return failure(errc::closed);
  return detail::peer_address(fd_.get());
}

Result<std::size_t> DatagramSocket::send_to(std::span<const std::byte> data,
                                            const SocketAddress& to, Timeout timeout) {
  if (!fd_) return failure(errc::closed);
  auto limit = detail::read_write_limit(timeout);
  return detail::send_message(fd_.get(), data, {}, &to, detail::call_options(limit, fd_id_));
}

Result<std::size_t> DatagramSocket::send_to(std::string_view data, const SocketAddress& to,
                                            Timeout timeout) {
  return send_to(std::as_bytes(std::span(data)), to, timeout);
}

Result<std::size_t> DatagramSocket::send(std::span<const std::byte> data, Timeout timeout) {
  if (!fd_) return failure(errc::closed);
  auto limit = detail::read_write_limit(timeout);
  return io::send(fd_.get(), data, MSG_NOSIGNAL, detail::call_options(limit, fd_id_));
}

Result<std::size_t> DatagramSocket::send(std::string_view data, Timeout timeout) {
  return send(std::as_bytes(std::span(data)), timeout);
}

Result<Received> DatagramSocket::recv_from(std::span<std::byte> buf, Timeout timeout) {
  if (!fd_) return failure(errc::closed);
  auto limit = detail::read_write_limit(timeout);
  return detail::receive_message(fd_.get(), buf, 0, detail::call_options(limit, fd_id_));
}

Result<Received> DatagramSocket::recv_from(std::span<char> buf, Timeout timeout) {
  return recv_from(detail::bytes(buf), timeout);
}

Result<Received> DatagramSocket::recv(std::span<std::byte> buf, Timeout timeout) {
  return recv_from(buf, timeout);
}

Result<Received> DatagramSocket::recv(std::span<char> buf, Timeout timeout) {
  return recv_from(detail::bytes(buf), timeout);
}

}  // namespace spindle::net
