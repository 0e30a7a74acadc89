// spindle-echo: a TCP echo server written as plain blocking code. One fiber
// per connection runs a read/write loop; SIGINT or SIGTERM stops accepting,
// lets every connection send back what it already received, and exits 0.

#include <CLI/CLI.hpp>
#include <chrono>
#include <spindle/spindle.hpp>

#include "serve.hpp"

namespace {

namespace net = spindle::net;

constexpr std::string_view kProgram = "spindle-echo";

// Echoes until end of stream, an error, or `idle` without a byte. Each read
// arrives in a buffer of the worker's receive pool, given back once echoed:
// a connection waiting for its next bytes holds no buffer.
void echo(net::TcpStream& stream, std::chrono::nanoseconds idle) {
  for (;;) {
    auto got = stream.read_pooled(idle);
    if (!got || got->empty()) return;
    if (!stream.write_all(got->view())) return;
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"spindle-echo: a TCP echo server, one fiber per connection"};
  spindle::apps::ServerFlags flags{.listen = "127.0.0.1:7000"};
  flags.add_to(app);
  CLI11_PARSE(app, argc, argv);
  const auto idle = flags.idle_timeout();
  return spindle::apps::run_server(kProgram, flags,
                                   [idle](net::TcpStream& stream) { echo(stream, idle); });
}
