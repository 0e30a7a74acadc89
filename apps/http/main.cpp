// spindle-http: an HTTP/1.1 server written as plain blocking code, one fiber
// per connection. GET / answers "Hello, World!"; anything else 404 (405 for
// other methods on /). Keep-alive and pipelining; 431/413 past the header
// and body limits, 400 for malformed requests (then the connection closes);
// idle connections close after --idle-timeout. SIGINT or SIGTERM stops
// accepting, lets the responses in flight finish, and exits 0.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <spindle/spindle.hpp>
#include <string>

#include "connection.hpp"
#include "connection_set.hpp"
#include "serve.hpp"
#include "stop_signal.hpp"

namespace {

namespace net = spindle::net;
namespace http = spindle::apps::http;

constexpr std::string_view kProgram = "spindle-http";

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"spindle-http: an HTTP/1.1 server, one fiber per connection"};
  std::string listen = "127.0.0.1:8080";
  std::size_t workers = 2;
  double idle_s = 60;
  double grace_s = 10;
  http::ServerOptions options;
  app.add_option("-l,--listen", listen, "address to listen on (host:port; port 0 picks one)")
      ->capture_default_str();
  app.add_option("-w,--workers", workers, "worker threads")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--idle-timeout", idle_s, "seconds a connection may stay silent")
      ->check(CLI::Range(0.001, 86400.0))
      ->capture_default_str();
  app.add_option("--grace", grace_s, "seconds a stop waits for responses in flight")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  app.add_option("--header-limit", options.header_limit,
                 "bytes of request line and headers (431 past it)")
      ->check(CLI::Range(256, 1024 * 1024))
      ->capture_default_str();
  app.add_option("--body-limit", options.body_limit, "bytes of request body (413 past it)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  options.idle_timeout =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(idle_s));

  try {
    spindle::apps::StopSignal stop;  // before any thread exists
    spindle::apps::ConnectionSet connections;  // outlives every fiber
    spindle::Runtime runtime(spindle::apps::server_config(workers));
    const auto grace = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::duration<double>(grace_s));
    return runtime.run([&] {
      return spindle::apps::serve(
          {.program = kProgram, .listen = listen, .workers = workers, .grace = grace}, stop,
          connections, [&](net::TcpStream& stream) { http::serve(stream, options); });
    });
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: {}\n", kProgram, e.what());
    return 1;
  }
}
