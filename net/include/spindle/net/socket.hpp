// Socket: what every socket of net/ shares (listeners, streams and datagram
// sockets, TCP, UDP and Unix): the descriptor it owns, its local address,
// its buffer sizes, closing.
#pragma once

#include <cstdint>

#include "spindle/base/result.hpp"
#include "spindle/base/unique_fd.hpp"
#include "spindle/net/address.hpp"
#include "spindle/net/options.hpp"

namespace spindle::net {

// A base class only (TcpListener, TcpStream, UdpSocket, UnixListener,
// UnixStream, UnixDatagram); move-only through them. None of these calls
// suspends: they are plain system calls, usable from any fiber or thread
// while the socket is open. Each fails with errc::closed on a socket that is
// not open.
class Socket {
 public:
  bool is_open() const noexcept { return bool(fd_); }
  int native_handle() const noexcept { return fd_.get(); }

  // getsockname(2): the address the socket is bound to (with the port the
  // kernel chose for port 0; unnamed for an unbound Unix socket).
  Result<SocketAddress> local_addr() const;

  // SO_SNDBUF / SO_RCVBUF (BufferSizes says what the kernel makes of them);
  // a zero field is left as it is. Throws std::invalid_argument naming the
  // field if one is above BufferSizes::kMax.
  Result<void> set_buffer_sizes(BufferSizes sizes);
  // The sizes the kernel reports (twice what was set, see BufferSizes).
  Result<BufferSizes> buffer_sizes() const;

  // Closes the socket now (a TCP stream with Config::zero_linger resets its
  // connection). No operation of it may be in flight.
  void close() noexcept { fd_.reset(); }

 protected:
  Socket() noexcept = default;
  // Owns `fd`, with a new io::new_fd_id().
  explicit Socket(UniqueFd fd) noexcept;
  Socket(Socket&& o) noexcept = default;
  Socket& operator=(Socket&& o) noexcept = default;
  ~Socket() = default;

  UniqueFd fd_;
  std::uint64_t fd_id_ = 0;  // IoOptions::fd_id of every operation on fd_
};

}  // namespace spindle::net
