// UnixListener: a listening Unix domain stream socket whose accept() parks
// the calling fiber.
#pragma once

#include "spindle/base/result.hpp"
#include "spindle/base/unique_fd.hpp"
#include "spindle/net/address.hpp"
#include "spindle/net/options.hpp"
#include "spindle/net/socket.hpp"
#include "spindle/net/timeout.hpp"
#include "spindle/net/unix_stream.hpp"

namespace spindle::net {

// Move-only. bind() and the Socket calls are plain syscalls that work
// anywhere; accept() is fiber-only. One fiber accepts at a time (not
// thread-safe). Only accept() suspends.
//
// A listener on a filesystem path creates a socket file there, which stays
// after the listener is closed (as with every Unix socket): remove it when
// done, or bind with UnixListenOptions::remove_stale_socket, which removes a
// leftover file that no socket listens on. An abstract address leaves
// nothing behind.
class UnixListener : public Socket {
 public:
  // Not listening: accept() fails with errc::closed.
  UnixListener() noexcept = default;

  // socket, buffer sizes, bind, listen — inline, no fiber needed. `addr` is a
  // path, an abstract name, or unnamed (the kernel picks an abstract name:
  // see local_addr()). Errors: the errno, e.g. EADDRINUSE for a path that
  // exists (see remove_stale_socket) or an abstract name in use, ENOENT or
  // EACCES for a directory that is missing or closed to the caller,
  // EAFNOSUPPORT for an IP address. Throws std::invalid_argument naming an
  // option whose value is out of range.
  static Result<UnixListener> bind(const SocketAddress& addr,
                                   const UnixListenOptions& options = {});

  // The next connection. Waits forever by default. Errors as
  // TcpListener::accept.
  // Suspends: until a connection arrives, an error, the timeout or an abort.
  Result<UnixStream> accept(Timeout timeout = Timeout::never());

 private:
  explicit UnixListener(UniqueFd fd) noexcept : Socket(std::move(fd)) {}
};

}  // namespace spindle::net
