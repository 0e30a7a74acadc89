// Socket options: what a listener, a connection or a datagram socket sets
// when it is made (ListenOptions, ConnectOptions, UdpOptions,
// UnixListenOptions, UnixBindOptions), and the values they share (Keepalive,
// BufferSizes). Plain values, thread-safe to read; nothing here suspends.
//
// A value out of range makes the call that takes it throw
// std::invalid_argument naming the option ("Keepalive::count must be ..."),
// before any socket is made, as an invalid Config does; the kernel's own
// refusals are returned as errors.
#pragma once

#include <chrono>
#include <cstddef>
#include <limits>
#include <optional>

#include "spindle/net/address.hpp"

namespace spindle::net {

// TCP keepalive: after `idle` without traffic the kernel sends a probe every
// `interval`, and resets the connection after `count` unanswered ones, so a
// peer that vanished (power loss, a dropped NAT mapping) is noticed by the
// next read (ETIMEDOUT). The defaults notice one in under 3 minutes.
struct Keepalive {
  // TCP_KEEPIDLE: 1 s .. 32767 s.
  std::chrono::seconds idle{15};
  // TCP_KEEPINTVL: 1 s .. 32767 s.
  std::chrono::seconds interval{15};
  // TCP_KEEPCNT: 1 .. 127.
  int count = 9;
};

// SO_SNDBUF and SO_RCVBUF in bytes; 0 leaves the system's size (and its
// autotuning). 1 .. kMax. Linux doubles the value for its bookkeeping (what
// getsockopt reports) and caps it at net.core.wmem_max / rmem_max.
struct BufferSizes {
  static constexpr std::size_t kMax = std::numeric_limits<int>::max() / 2;
  std::size_t send = 0;
  std::size_t receive = 0;
};

// TcpListener::bind. Accepted connections inherit the buffer sizes and the
// keepalive settings from the listening socket.
struct ListenOptions {
  // Asks listen(2) for the largest backlog the system allows: Linux caps it
  // at net.core.somaxconn (4096 by default).
  static constexpr int kSystemMaxBacklog = std::numeric_limits<int>::max();
  // listen(2) backlog: completed connections the kernel queues for accept().
  // The default, the system's maximum, lets a burst of thousands of connects
  // wait there instead of having their SYNs dropped and resent a second later.
  int backlog = kSystemMaxBacklog;
  // SO_REUSEADDR: rebind a port whose old connections linger in TIME_WAIT.
  bool reuse_address = true;
  // SO_REUSEPORT: several sockets (of this or another process of the same
  // user) listen on one port, each bound with it; the kernel spreads the
  // incoming connections over them.
  bool reuse_port = false;
  // Set before listen(2), so the window scale offered to clients fits them.
  BufferSizes buffers{};
  // Keepalive on every accepted connection; none by default.
  std::optional<Keepalive> keepalive{};
};

// TcpStream::connect.
struct ConnectOptions {
  // Bind-before-connect: the local address (and port) of the connection.
  // Port 0 lets the kernel choose the port at connect time
  // (IP_BIND_ADDRESS_NO_PORT), so the address alone does not use up ports.
  std::optional<SocketAddress> local{};
  // SO_REUSEADDR / SO_REUSEPORT for the bind of `local`.
  bool reuse_address = false;
  bool reuse_port = false;
  BufferSizes buffers{};
  std::optional<Keepalive> keepalive{};
};

// UdpSocket::bind.
struct UdpOptions {
  // SO_REUSEADDR / SO_REUSEPORT (several sockets on one port: with
  // reuse_port the kernel spreads the datagrams over them).
  bool reuse_address = false;
  bool reuse_port = false;
  BufferSizes buffers{};
};

// UnixListener::bind.
struct UnixListenOptions {
  int backlog = ListenOptions::kSystemMaxBacklog;
  // A filesystem path that already holds a socket file nobody listens on (a
  // connect to it is refused: its owner exited without removing it) is
  // removed and bound again. Off by default: then such a path gives
  // EADDRINUSE, as does, always, a path in use or one that is not a socket.
  bool remove_stale_socket = false;
  BufferSizes buffers{};
};

// UnixDatagram::bind.
struct UnixBindOptions {
  // As UnixListenOptions::remove_stale_socket: a socket file no socket is
  // bound to any more is removed and bound again.
  bool remove_stale_socket = false;
  BufferSizes buffers{};
};

}  // namespace spindle::net
