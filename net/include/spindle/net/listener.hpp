// TcpListener: a listening TCP socket whose accept() parks the calling fiber.
#pragma once

#include "spindle/base/result.hpp"
#include "spindle/base/unique_fd.hpp"
#include "spindle/net/address.hpp"
#include "spindle/net/options.hpp"
#include "spindle/net/socket.hpp"
#include "spindle/net/stream.hpp"
#include "spindle/net/timeout.hpp"

namespace spindle::net {

// Move-only. bind() and the Socket calls are plain syscalls that work
// anywhere; accept() is fiber-only. One fiber accepts at a time (not
// thread-safe). Only accept() suspends.
class TcpListener : public Socket {
 public:
  // Not listening: accept() fails with errc::closed.
  TcpListener() noexcept = default;

  // socket, the options (SO_REUSEADDR by default; SO_REUSEPORT, buffer
  // sizes, keepalive when asked), bind, listen — inline, no fiber needed.
  // Port 0 picks a free port (see local_addr()). Errors: the errno, e.g.
  // EADDRINUSE when the port is taken (without reuse_port on both sockets),
  // EADDRNOTAVAIL for an address this machine does not have, EAFNOSUPPORT
  // without IPv6 or for a Unix address. Throws std::invalid_argument naming
  // an option whose value is out of range.
  static Result<TcpListener> bind(const SocketAddress& addr, const ListenOptions& options = {});

  // The next connection (the backend's accept), with Config's tcp_nodelay
  // and zero_linger applied. Waits forever by default (the reference's
  // accept re-issues itself on every read_write_timeout expiry, which is the
  // same). A connection reset while queued is skipped. Other errors (EMFILE,
  // ENFILE, ENOBUFS, ...) are returned and leave the listener usable;
  // errc::timed_out, errc::aborted (the accept is cancelled and its
  // completion awaited, so no connection is lost).
  // Suspends: until a connection arrives, an error, the timeout or an abort.
  Result<TcpStream> accept(Timeout timeout = Timeout::never());

 private:
  explicit TcpListener(UniqueFd fd) noexcept : Socket(std::move(fd)) {}
};

}  // namespace spindle::net
