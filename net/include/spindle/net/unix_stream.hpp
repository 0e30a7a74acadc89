// UnixStream: a connected Unix domain stream socket; reading, writing,
// buffering, timeouts and poisoning are StreamSocket's. It also passes file
// descriptors (SCM_RIGHTS).
#pragma once

#include <cstddef>
#include <span>
#include <utility>

#include "spindle/base/result.hpp"
#include "spindle/base/unique_fd.hpp"
#include "spindle/net/address.hpp"
#include "spindle/net/received.hpp"
#include "spindle/net/stream_socket.hpp"
#include "spindle/net/timeout.hpp"

namespace spindle::net {

class UnixListener;

// Fiber-only, with the thread rules of StreamSocket: send_fds belongs to the
// write half, recv_fds to the read half. pair() never suspends.
class UnixStream : public StreamSocket {
 public:
  // Not connected: every call fails with errc::closed.
  UnixStream() noexcept = default;

  // Connects to the Unix socket at `peer` (a path or an abstract name)
  // through the backend's connect. The default timeout is
  // Config::connect_timeout. Errors: the errno (ENOENT for a path with no
  // socket, ECONNREFUSED when nothing listens there, EAFNOSUPPORT for an IP
  // address, ...), errc::timed_out, errc::aborted.
  // Suspends: until connected, refused, timed out or aborted.
  static Result<UnixStream> connect(const SocketAddress& peer, Timeout timeout = {});

  // Two streams connected to each other (socketpair(2)), unnamed.
  static Result<std::pair<UnixStream, UnixStream>> pair();

  // write_all of `data` with the descriptors `fds` attached to its first
  // bytes: the receiver gets its own copies of them (the caller still owns
  // and closes its own). Throws std::invalid_argument if `data` is empty (a
  // stream carries descriptors only with bytes) or `fds` holds more than
  // kMaxPassedFds. Errors and poisoning as write_all.
  // Suspends: as write_all.
  Result<void> send_fds(std::span<const std::byte> data, std::span<const int> fds,
                        Timeout timeout = {});

  // read() that also takes the descriptors sent with the bytes it returns,
  // at most `max_fds` of them, as owned close-on-exec fds (Received::fds;
  // Received::size is the byte count, 0 at end of stream). Bytes already in
  // the read buffer are returned first, without descriptors; a receive
  // goes straight into `buf` and ends after the bytes that carried
  // descriptors. More descriptors than `max_fds` (or than the process may
  // open) is std::errc::message_size: those that arrived are closed, and the
  // read half is poisoned (the bytes that came with them are gone with
  // them). Descriptors sent with bytes that a read() took are closed by the
  // kernel: read the bytes that carry descriptors with recv_fds.
  // Suspends: as read.
  Result<Received> recv_fds(std::span<std::byte> buf, std::size_t max_fds, Timeout timeout = {});

 private:
  friend class UnixListener;
  UnixStream(UniqueFd fd, const SocketAddress& peer) noexcept : StreamSocket(std::move(fd), peer) {}
};

}  // namespace spindle::net
