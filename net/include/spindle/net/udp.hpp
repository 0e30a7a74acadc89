// UdpSocket: a UDP socket (IPv4 or IPv6) whose sends and receives park the
// calling fiber; the calls are DatagramSocket's.
#pragma once

#include "spindle/base/result.hpp"
#include "spindle/base/unique_fd.hpp"
#include "spindle/net/address.hpp"
#include "spindle/net/datagram.hpp"
#include "spindle/net/options.hpp"

namespace spindle::net {

// Move-only, with the thread rules of DatagramSocket. bind() and
// set_broadcast() never suspend.
class UdpSocket : public DatagramSocket {
 public:
  // Not open: every call fails with errc::closed.
  UdpSocket() noexcept = default;

  // socket, the options, bind — inline, no fiber needed. Port 0 picks a
  // free port (see local_addr()); any_v4()/any_v6() take datagrams for every
  // local address. Errors: the errno, e.g. EADDRINUSE when the port is taken
  // (without reuse_port on both sockets), EADDRNOTAVAIL, EAFNOSUPPORT
  // without IPv6 or for a Unix address. Throws std::invalid_argument naming
  // an option whose value is out of range.
  static Result<UdpSocket> bind(const SocketAddress& addr, const UdpOptions& options = {});

  // SO_BROADCAST: allows sends to a broadcast address (EACCES without it).
  Result<void> set_broadcast(bool on);

 private:
  explicit UdpSocket(UniqueFd fd) noexcept : DatagramSocket(std::move(fd)) {}
};

}  // namespace spindle::net
