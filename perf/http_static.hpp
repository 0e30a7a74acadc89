// The frame of http_static and https, the same for both servers: the server
// program runs pinned to CPU 0 and serves the prepared file; the
// measurement's process pins itself to CPU 1, checks the server's answers
// (and over TLS what its handshake negotiated), then loads the server with
// wrk (pinned to CPU 1 with it) for the window, as the row's HttpLoad says.
// The row has the requests wrk completed, its req/s, and the server's CPU
// time per request.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "row.hpp"
#include "workloads.hpp"

namespace spindle::perf {

// The file both servers serve, under Params::static_root.
inline constexpr std::string_view kStaticName = "static.bin";

// A server program that listens on 127.0.0.1:port once started and serves
// Params::static_root (over TLS with Params::tls_certificate, for a load
// with tls).
struct StaticServer {
  std::string exe;
  std::vector<std::string> args;
  std::uint16_t port = 0;
  std::filesystem::path log;  // a file whose end says why it did not start; empty: none
};

// Starts `server` (for a load with tls, with OPENSSL_CONF in its
// environment), waits (up to 10 s) until it accepts, checks its answers,
// runs wrk, checks every response wrk counted, and stops the server. A
// server that ends early, a wrong answer, a TLS handshake that did not
// negotiate what the OpenSSL configuration file says, or an error counted by
// wrk throws PerfError. The row's cpu_s is the server's CPU time over wrk's
// run; its workers is 1.
Row measure_http(const Params& p, const HttpLoad& load, std::string_view impl,
                 const StaticServer& server);

// A port on 127.0.0.1 that was free a moment ago, for a server to bind.
std::uint16_t free_loopback_port();

// Empty when wrk, and for a load with tls openssl, are on PATH, else why
// neither side of the row can run.
std::string load_missing(const HttpLoad& load);

}  // namespace spindle::perf
