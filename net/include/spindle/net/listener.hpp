// TcpListener: a listening TCP socket whose accept() parks the calling fiber.
#pragma once

#include <limits>
#include <utility>

#include "spindle/base/result.hpp"
#include "spindle/base/unique_fd.hpp"
#include "spindle/net/address.hpp"
#include "spindle/net/stream.hpp"
#include "spindle/net/timeout.hpp"

namespace spindle::net {

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
};

// Move-only. bind() and local_addr() are plain syscalls that work anywhere;
// accept() is fiber-only. One fiber accepts at a time (not thread-safe).
// Only accept() suspends; bind(), local_addr() and close() never do.
class TcpListener {
 public:
  // Not listening: accept() fails with errc::closed.
  TcpListener() noexcept = default;

  // socket, SO_REUSEADDR, bind, listen — inline, no fiber needed. Port 0
  // picks a free port (see local_addr()). Errors: the errno, e.g.
  // EADDRINUSE when the port is taken, EADDRNOTAVAIL for an address this
  // machine does not have, EAFNOSUPPORT without IPv6.
  static Result<TcpListener> bind(const SocketAddress& addr, ListenOptions options = {});

  // The next connection (ACCEPT through the ring), with Config's tcp_nodelay
  // and zero_linger applied. Waits forever by default (the reference's
  // accept re-issues itself on every read_write_timeout expiry, which is the
  // same). A connection reset while queued is skipped. Other errors (EMFILE,
  // ENFILE, ENOBUFS, ...) are returned and leave the listener usable;
  // errc::timed_out, errc::aborted (the accept is cancelled and its CQE
  // awaited, so no connection is lost).
  // Suspends: until a connection arrives, an error, the timeout or an abort.
  Result<TcpStream> accept(Timeout timeout = Timeout::never());

  Result<SocketAddress> local_addr() const;

  bool is_open() const noexcept { return bool(fd_); }
  int native_handle() const noexcept { return fd_.get(); }
  // No accept may be in flight.
  void close() noexcept;

 private:
  explicit TcpListener(UniqueFd fd) noexcept;
  UniqueFd fd_;
  std::uint64_t fd_id_ = 0;  // IoOptions::fd_id of every accept on fd_
};

}  // namespace spindle::net
