// Connection: one connection of the HTTP client to an origin, plain TCP or
// TLS, and the exchange of one request and its reply on it.
#pragma once

#include <string_view>
#include <variant>

#include "spindle/base/result.hpp"
#include "spindle/base/time.hpp"
#include "spindle/http/message.hpp"
#include "spindle/http/url.hpp"
#include "spindle/net/stream.hpp"
#include "spindle/tls/stream.hpp"

namespace spindle::http::detail {

// What became of a reply's reading, beside its result.
struct ReplyState {
  bool received = false;  // a byte of the reply arrived
  bool reusable = false;  // read whole, and neither side asked to close
};

// Fiber-only; used by one fiber at a time.
class Connection {
 public:
  // Resolves url.host, connects to the first of its addresses that answers,
  // and for https:// completes a handshake with `*tls` (the server's
  // certificate checked against url.host when it verifies; `tls` may be
  // null for http://).
  // Suspends: for the lookup, the connect and the handshake.
  static Result<Connection> open(const Url& url, const tls::Context* tls, Deadline deadline);

  // Sends `head` and `body`.
  // Suspends: until they are with the kernel.
  Result<void> send(std::string_view head, std::string_view body, Deadline deadline);

  // Reads one reply (its interim 1xx replies skipped); `head`: the request
  // was a HEAD, so the reply has no body whatever its headers say.
  // Suspends: until the reply is read whole.
  Result<Response> receive(bool head, std::size_t body_limit, Deadline deadline, ReplyState& state);

  // When it was put in the pool, for the pool's idle timeout.
  Deadline idle_since{};

 private:
  explicit Connection(net::TcpStream stream) noexcept : stream_(std::move(stream)) {}
  explicit Connection(tls::TlsStream stream) noexcept : stream_(std::move(stream)) {}

  std::variant<net::TcpStream, tls::TlsStream> stream_;
};

}  // namespace spindle::http::detail
