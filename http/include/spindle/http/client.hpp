// An HTTP/1.1 client for fibers: http:// and https:// (through TlsStream,
// the server's certificate verified), Content-Length, chunked and
// read-until-close bodies, redirects (not followed unless asked), one
// deadline per request, and a Client that keeps connections open between
// requests (a small pool per host).
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "spindle/base/result.hpp"
#include "spindle/http/error.hpp"
#include "spindle/http/message.hpp"
#include "spindle/net/stream.hpp"
#include "spindle/tls/context.hpp"

namespace spindle::http {

// Plain value.
struct RequestOptions {
  // One limit for the whole request: name lookup, connection, TLS
  // handshake, sending, the reply, and every redirect followed.
  net::Timeout timeout = std::chrono::seconds(30);
  // Redirects (301, 302, 303, 307, 308 with a Location) to follow. 0, the
  // default, returns the redirect itself; past the limit the request fails
  // with errc::too_many_redirects. A 303 (and a 301 or 302 answering a POST)
  // is followed with a GET without body.
  int max_redirects = 0;
  // A longer body fails the request with errc::body_too_large.
  std::size_t body_limit = 64 * 1024 * 1024;
};

// Plain value.
struct ClientOptions {
  // Connections kept open per origin (scheme, host, port) between requests.
  std::size_t max_idle_per_origin = 4;
  // A pooled connection idle this long is closed instead of reused.
  std::chrono::nanoseconds idle_timeout = std::chrono::seconds(30);
  // For https://: the TLS context. By default a client context that trusts
  // the system's CA store (default_tls_context()).
  std::optional<tls::Context> tls{};
  std::string user_agent = "spindle";
};

namespace detail {
class Pool;
}

// Thread-safe: fibers on any worker may send requests through one Client at
// once; each request has a connection to itself while it runs. A connection
// goes back to the pool when its reply was read whole and neither side asked
// to close it; a request whose reused connection turns out closed by the
// server is sent again on a new one if its method is idempotent (GET, HEAD,
// PUT, DELETE, OPTIONS). Destroying the Client closes the pooled connections
// (no fiber may be using it then).
class Client {
 public:
  explicit Client(ClientOptions options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sends `request` and reads the reply. Errors: errc (bad_url,
  // too_many_redirects, body_too_large, header_too_large,
  // malformed_response, closed_early, no_ca_store), net::resolve's, TcpStream's
  // (errno, errc::timed_out, errc::aborted), TlsStream's (a refused
  // certificate: tls::verify_category()).
  // Suspends: until the reply is read, an error, the timeout or an abort.
  Result<Response> request(const Request& request, const RequestOptions& options = {});
  // request() of a GET.
  Result<Response> get(std::string_view url, const RequestOptions& options = {});

  // Connections this client has opened, and those idle in its pool now.
  std::size_t connections_opened() const noexcept;
  std::size_t idle_connections() const;

 private:
  std::unique_ptr<detail::Pool> pool_;
};

// One request on a connection of its own, closed afterwards.
// Suspends: as Client::request.
Result<Response> request(const Request& request, const RequestOptions& options = {});
Result<Response> get(std::string_view url, const RequestOptions& options = {});

// The TLS context https:// uses by default: a client context trusting the
// system's CA store, made once per process on the blocking pool (it reads
// the store's files). Throws std::invalid_argument when there is no store.
// Suspends: the first time, while the store is read.
const tls::Context& default_tls_context();

}  // namespace spindle::http
