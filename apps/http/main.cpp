// spindle-http: an HTTP/1.1 server written as plain blocking code, one fiber
// per connection. GET / answers "Hello, World!", GET /metrics the runtime's
// metrics in the Prometheus text format; anything else 404 (405 for other
// methods on those paths). With --root DIR, GET and HEAD of any other path
// serve the file under DIR (a path ending in '/' its index.html), the body
// spliced from the file into the socket (over TLS, unless the kernel encrypts,
// read and encrypted a piece at a time); 404 for what is not a regular
// file there or has a ".." segment, 403 for a symlink out of DIR (an absolute one always counts as
// out). Keep-alive and pipelining;
// 431/413 past the header and body limits, 400 for malformed requests (then the connection closes);
// idle connections close after --idle-timeout, and a request not whole
// --request-timeout after its first byte (slowloris) closes its connection. SIGINT or SIGTERM stops
// accepting, lets the responses in flight finish, and exits 0. With --tls-cert and --tls-key it
// serves HTTPS instead (TLS 1.2 or newer, ALPN http/1.1): each connection's handshake runs on its
// own fiber, bounded by --tls-handshake-timeout.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <optional>
#include <spindle/spindle.hpp>
#include <stdexcept>
#include <string>

#include "connection.hpp"
#include "serve.hpp"

namespace {

namespace net = spindle::net;
namespace tls = spindle::tls;
namespace http = spindle::apps::http;

constexpr std::string_view kProgram = "spindle-http";

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"spindle-http: an HTTP/1.1 server, one fiber per connection"};
  spindle::apps::ServerFlags flags{.listen = "127.0.0.1:8080"};
  http::ServerOptions options;
  flags.add_to(app);
  app.add_option("--header-limit", options.header_limit,
                 "bytes of request line and headers (431 past it)")
      ->check(CLI::Range(256, 1024 * 1024))
      ->capture_default_str();
  app.add_option("--body-limit", options.body_limit, "bytes of request body (413 past it)")
      ->capture_default_str();
  double request_s = 30;
  app.add_option("--request-timeout", request_s,
                 "seconds from a request's first byte to its last (0: no limit)")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
  std::string root;
  app.add_option("--root", root, "serve the files under this directory");
  std::string tls_cert;
  std::string tls_key;
  double handshake_s = 10;
  auto* cert_flag = app.add_option("--tls-cert", tls_cert,
                                   "serve HTTPS with this PEM certificate chain (leaf first)");
  auto* key_flag =
      app.add_option("--tls-key", tls_key, "the PEM private key of --tls-cert")->needs(cert_flag);
  cert_flag->needs(key_flag);
  app.add_option("--tls-handshake-timeout", handshake_s, "seconds a TLS handshake may take")
      ->check(CLI::Range(0.001, 3600.0))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  std::optional<http::StaticRoot> files;
  if (!root.empty()) {
    try {
      files = http::StaticRoot::open(root);
    } catch (const std::exception& e) {
      fmt::print(stderr, "{}: {}\n", kProgram, e.what());
      return 1;
    }
    options.root = &*files;
  }
  options.idle_timeout = flags.idle_timeout();
  options.request_timeout = spindle::apps::seconds(request_s);
  if (tls_cert.empty()) {
    return spindle::apps::run_server(
        kProgram, flags, [&options](net::TcpStream& stream) { http::serve(stream, options); });
  }

  // The certificate and key are read here, before the runtime starts.
  std::optional<tls::Context> context;
  try {
    context = tls::Context::server(
        {.certificate_chain_file = tls_cert, .private_key_file = tls_key, .alpn = {"http/1.1"}});
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "{}: {}\n", kProgram, e.what());
    return 1;
  }
  const auto handshake_timeout = spindle::apps::seconds(handshake_s);
  spindle::apps::ServerHooks hooks;
  hooks.start = [&]() -> std::optional<std::string> {
    return context->kernel_offload() ? "HTTPS, kernel TLS offload for sending"
                                     : "HTTPS, TLS records in user space";
  };
  return spindle::apps::run_server(
      kProgram, flags,
      [&](net::TcpStream& tcp) {
        auto stream = tls::TlsStream::accept(*context, std::move(tcp), handshake_timeout);
        if (!stream) return;  // the socket stays with `tcp`, which run_server closes
        http::serve(*stream, options);
        // run_server closes the socket once the connection has left its set.
        tcp = std::move(*stream).into_tcp();
      },
      hooks);
}
