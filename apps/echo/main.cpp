// spindle-echo: a TCP echo server written as plain blocking code. One fiber
// per connection runs a read/write loop; SIGINT or SIGTERM stops accepting,
// lets every connection send back what it already received, and exits 0.

#include <CLI/CLI.hpp>
#include <chrono>
#include <memory>
#include <span>
#include <spindle/spindle.hpp>

#include "serve.hpp"

namespace {

namespace net = spindle::net;

constexpr std::string_view kProgram = "spindle-echo";

// Echoes until end of stream, an error, or `idle` without a byte. The buffer
// is on the heap: on the fiber's stack it would spread the frames below it
// over more pages, which an idle connection then keeps resident.
void echo(net::TcpStream& stream, std::chrono::nanoseconds idle) {
  constexpr std::size_t kBuffer = 16 * 1024;
  const auto buf = std::make_unique_for_overwrite<char[]>(kBuffer);
  for (;;) {
    auto n = stream.read(std::span<char>(buf.get(), kBuffer), idle);
    if (!n || *n == 0) return;
    if (!stream.write_all(std::string_view(buf.get(), *n))) return;
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
