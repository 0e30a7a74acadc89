// UnixDatagram: a Unix domain datagram socket whose sends and receives park
// the calling fiber (the calls are DatagramSocket's), and which passes file
// descriptors (SCM_RIGHTS).
#pragma once

#include <cstddef>
#include <span>
#include <utility>

#include "spindle/base/result.hpp"
#include "spindle/base/unique_fd.hpp"
#include "spindle/net/address.hpp"
#include "spindle/net/datagram.hpp"
#include "spindle/net/options.hpp"
#include "spindle/net/received.hpp"
#include "spindle/net/timeout.hpp"

namespace spindle::net {

// Move-only, with the thread rules of DatagramSocket. bind(), unbound() and
// pair() never suspend.
//
// A socket bound to a filesystem path creates a socket file there, which
// stays after it is closed: remove it when done, or bind with
// UnixBindOptions::remove_stale_socket.
class UnixDatagram : public DatagramSocket {
 public:
  // Not open: every call fails with errc::closed.
  UnixDatagram() noexcept = default;

  // socket, buffer sizes, bind — inline. `addr` is a path, an abstract name,
  // or unnamed (the kernel picks an abstract name). Errors as
  // UnixListener::bind.
  static Result<UnixDatagram> bind(const SocketAddress& addr, const UnixBindOptions& options = {});
  // A socket bound to no address: it sends (its datagrams come from an
  // unnamed sender, which cannot be answered) and receives once connected.
  static Result<UnixDatagram> unbound();
  // Two unnamed sockets connected to each other (socketpair(2)).
  static Result<std::pair<UnixDatagram, UnixDatagram>> pair();

  // One datagram of `data` (may be empty) to the connected peer, with the
  // descriptors `fds` attached: the receiver gets its own copies of them
  // (the caller still owns its own). Throws std::invalid_argument if `fds`
  // holds more than kMaxPassedFds.
  // Suspends: as send.
  Result<std::size_t> send_fds(std::span<const std::byte> data, std::span<const int> fds,
                               Timeout timeout = {});
  // recv_from that also takes the descriptors sent with the datagram, at
  // most `max_fds` of them, as owned close-on-exec fds (Received::fds). More
  // than `max_fds` (or than the process may open) is
  // std::errc::message_size: those that arrived are closed, and the datagram
  // is gone with them.
  // Suspends: as recv_from.
  Result<Received> recv_fds(std::span<std::byte> buf, std::size_t max_fds, Timeout timeout = {});

 private:
  explicit UnixDatagram(UniqueFd fd) noexcept : DatagramSocket(std::move(fd)) {}
};

}  // namespace spindle::net
