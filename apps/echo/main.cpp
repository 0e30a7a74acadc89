// spindle-echo: a TCP echo server written as plain blocking code. One fiber
// per connection runs a read/write loop; SIGINT or SIGTERM stops accepting,
// lets every connection send back what it already received, and exits 0.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <array>
#include <chrono>
#include <spindle/spindle.hpp>
#include <string>

#include "connection_set.hpp"
#include "serve.hpp"
#include "stop_signal.hpp"

namespace {

namespace net = spindle::net;

constexpr std::string_view kProgram = "spindle-echo";

// Echoes until end of stream, an error, or `idle` without a byte.
void echo(net::TcpStream& stream, std::chrono::seconds idle) {
  std::array<char, 16 * 1024> buf;
  for (;;) {
    auto n = stream.read(buf, idle);
    if (!n || *n == 0) return;
    if (!stream.write_all(std::string_view(buf.data(), *n))) return;
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"spindle-echo: a TCP echo server, one fiber per connection"};
  std::string listen = "127.0.0.1:7000";
  std::size_t workers = 2;
  double grace_s = 10;
  std::size_t idle_s = 60;
  app.add_option("-l,--listen", listen, "address to listen on (host:port; port 0 picks one)")
      ->capture_default_str();
  app.add_option("-w,--workers", workers, "worker threads")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--idle-timeout", idle_s, "seconds a connection may stay silent")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app.add_option("--grace", grace_s, "seconds a stop waits for open connections")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    spindle::apps::StopSignal stop;  // before any thread exists
    spindle::apps::ConnectionSet connections;  // outlives every fiber
    spindle::Runtime runtime(spindle::apps::server_config(workers));
    const auto grace = std::chrono::duration_cast<std::chrono::nanoseconds>(
        std::chrono::duration<double>(grace_s));
    return runtime.run([&] {
      return spindle::apps::serve(
          {.program = kProgram, .listen = listen, .workers = workers, .grace = grace}, stop,
          connections, [&](net::TcpStream& stream) { echo(stream, std::chrono::seconds(idle_s)); });
    });
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: {}\n", kProgram, e.what());
    return 1;
  }
}
