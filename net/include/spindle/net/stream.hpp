// TcpStream: a connected TCP socket; reading, writing, buffering, timeouts
// and poisoning are StreamSocket's.
#pragma once

#include <optional>

#include "spindle/base/result.hpp"
#include "spindle/base/unique_fd.hpp"
#include "spindle/net/address.hpp"
#include "spindle/net/options.hpp"
#include "spindle/net/stream_socket.hpp"
#include "spindle/net/timeout.hpp"

namespace spindle::net {

class TcpListener;

// Fiber-only, with the thread rules of StreamSocket. connect() suspends; the
// option calls are plain syscalls and never do.
class TcpStream : public StreamSocket {
 public:
  // Not connected: every call fails with errc::closed.
  TcpStream() noexcept = default;
  TcpStream(TcpStream&&) noexcept = default;
  TcpStream& operator=(TcpStream&&) noexcept = default;
  // Closes the socket (see close()).
  ~TcpStream() = default;

  // Connects to `peer` (an IP address) through the backend's connect, then
  // applies Config's tcp_nodelay and zero_linger. The default timeout is
  // Config::connect_timeout; on expiry the attempt is cancelled and
  // errc::timed_out returned. Errors: the errno (ECONNREFUSED, ENETUNREACH,
  // EAFNOSUPPORT for a Unix address, ...), errc::timed_out, errc::aborted.
  // Suspends: until connected, refused, timed out or aborted.
  static Result<TcpStream> connect(const SocketAddress& peer, Timeout timeout = {});
  // The same with `options` set first: a local address to bind (EADDRINUSE
  // if it is taken, EADDRNOTAVAIL if this machine does not have it), buffer
  // sizes, keepalive. Throws std::invalid_argument naming an option whose
  // value is out of range.
  static Result<TcpStream> connect(const SocketAddress& peer, const ConnectOptions& options,
                                   Timeout timeout = {});

  // TCP_NODELAY (on by default through Config::tcp_nodelay).
  Result<void> set_nodelay(bool on) noexcept;

  // SO_KEEPALIVE with `keepalive`'s timings, or off (std::nullopt, the
  // default). Throws std::invalid_argument naming a timing out of range.
  Result<void> set_keepalive(const std::optional<Keepalive>& keepalive);

 private:
  friend class TcpListener;
  TcpStream(UniqueFd fd, const SocketAddress& peer) noexcept : StreamSocket(std::move(fd), peer) {}
};

}  // namespace spindle::net
