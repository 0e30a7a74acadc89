// DatagramSocket: what UDP and Unix datagram sockets share: sending and
// receiving whole datagrams, to and from any address or a connected peer,
// with per-call timeouts.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "spindle/base/result.hpp"
#include "spindle/base/unique_fd.hpp"
#include "spindle/net/address.hpp"
#include "spindle/net/received.hpp"
#include "spindle/net/socket.hpp"
#include "spindle/net/timeout.hpp"

namespace spindle::net {

// A base class only (UdpSocket, UnixDatagram). Fiber-only for the calls that
// suspend (the sends and receives); connect() and peer_addr() are plain
// syscalls usable anywhere. Any number of fibers may send and receive at
// once: each datagram is one operation, whole or not at all.
//
// Every send and receive is one operation of spindle::io (send, sendmsg,
// recvmsg) on the calling worker's backend, with a deadline from its Timeout
// (default: Config's read_write_timeout; a server waiting for requests
// passes Timeout::never()). Datagrams keep their boundaries, so a failed,
// timed-out or aborted call poisons nothing: the next call works as usual.
class DatagramSocket : public Socket {
 public:
  // connect(2): sends without an address go to `peer`, and only its
  // datagrams are received. Datagram connects do not wait. Errors: the errno
  // (EAFNOSUPPORT for an address of the other family, ECONNREFUSED for a
  // Unix socket nobody is bound to, ...).
  Result<void> connect(const SocketAddress& peer);

  // getpeername(2): the connected peer (ENOTCONN if there is none).
  Result<SocketAddress> peer_addr() const;

  // One datagram of `data` to `to`: returns its size. EMSGSIZE if it is
  // too large for the socket; a connected socket may send to its peer only
  // (EISCONN otherwise).
  // Suspends: until the kernel takes the datagram (a full send buffer
  // waits), an error, the timeout or an abort.
  Result<std::size_t> send_to(std::span<const std::byte> data, const SocketAddress& to,
                              Timeout timeout = {});
  Result<std::size_t> send_to(std::string_view data, const SocketAddress& to, Timeout timeout = {});
  // send_to the connected peer (EDESTADDRREQ if there is none).
  // Suspends: as send_to.
  Result<std::size_t> send(std::span<const std::byte> data, Timeout timeout = {});
  Result<std::size_t> send(std::string_view data, Timeout timeout = {});

  // The next datagram into `buf`: its size in the buffer, whether it was
  // longer than the buffer (its rest is lost), and its sender. A datagram of
  // zero bytes is a datagram (size 0), not an end. An ICMP error for an
  // earlier send to a closed UDP port may be reported here (ECONNREFUSED)
  // on a connected socket. On a Unix socket, a datagram that came with
  // descriptors fails with std::errc::message_size (the kernel closes them;
  // UnixDatagram::recv_fds takes them).
  // Suspends: until a datagram arrives, an error, the timeout or an abort.
  Result<Received> recv_from(std::span<std::byte> buf, Timeout timeout = {});
  Result<Received> recv_from(std::span<char> buf, Timeout timeout = {});
  // recv_from on a connected socket, where every datagram is the peer's.
  // Suspends: as recv_from.
  Result<Received> recv(std::span<std::byte> buf, Timeout timeout = {});
  Result<Received> recv(std::span<char> buf, Timeout timeout = {});

 protected:
  DatagramSocket() noexcept = default;
  explicit DatagramSocket(UniqueFd fd) noexcept : Socket(std::move(fd)) {}
  DatagramSocket(DatagramSocket&&) noexcept = default;
  DatagramSocket& operator=(DatagramSocket&&) noexcept = default;
  ~DatagramSocket() = default;
};

}  // namespace spindle::net
