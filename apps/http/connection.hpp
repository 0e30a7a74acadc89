// One HTTP/1.1 connection of spindle-http: keep-alive, pipelining, limits,
// over plain TCP or TLS.
#pragma once

#include <chrono>
#include <cstdint>

#include "spindle/net/stream.hpp"
#include "spindle/tls/stream.hpp"
#include "static_root.hpp"

namespace spindle::apps::http {

struct ServerOptions {
  // A connection silent this long (between requests, or within one) is closed.
  std::chrono::nanoseconds idle_timeout = std::chrono::seconds(60);
  // A request not whole this long after its first byte is closed without an
  // answer: a client trickling one (slowloris) keeps no connection. 0: no limit.
  std::chrono::nanoseconds request_timeout = std::chrono::seconds(30);
  // Request line and headers larger than this are answered 431.
  std::uint32_t header_limit = 8 * 1024;
  // Bodies larger than this are answered 413 (before they are read, when the
  // Content-Length says so).
  std::uint64_t body_limit = 1024 * 1024;
  // Serves GET and HEAD of every path but /metrics from this directory
  // (--root); null: the hello response at /. Outlives the server.
  const StaticRoot* root = nullptr;
};

// Serves requests on `stream` until the client closes, an error, the idle or
// request timeout, or end of input. `Stream` is net::TcpStream or
// tls::TlsStream (the calls are resolved at compile time: a plain connection
// pays nothing for TLS). Requests are parsed in place from the stream's read
// buffer (the TlsStream's holds plaintext); the responses to every request already received go out
// in one write (pipelining). A malformed request gets 400, oversized ones 431/413, and the
// connection is then closed after the response, as it is after "Connection: close". A stop
// (ConnectionSet::stop shuts the read side down) is end of input: every request the kernel already
// holds is answered, then the connection closes. A connection that has spliced a file's body
// keeps its pipe (two descriptors) until it closes. Fiber-only. Suspends: in reads and writes of
// `stream`.
template <class Stream>
void serve(Stream& stream, const ServerOptions& options);

extern template void serve(net::TcpStream&, const ServerOptions&);
extern template void serve(tls::TlsStream&, const ServerOptions&);

}  // namespace spindle::apps::http
