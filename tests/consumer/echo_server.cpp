// echo_server ADDRESS [CONNECTIONS]: a TCP echo server on an installed spindle.
// Listens on ADDRESS ("127.0.0.1:0" picks a port), prints "listening on
// <address>", and echoes each connection on a fiber of its own. With
// CONNECTIONS it stops accepting after that many and exits 0 once they end.
#include <array>
#include <cstdio>
#include <exception>
#include <spindle/spindle.hpp>
#include <stdexcept>
#include <string>
#include <string_view>

namespace net = spindle::net;

int main(int argc, char** argv) try {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s ADDRESS [CONNECTIONS]\n", argv[0]);
    return 2;
  }
  const auto addr = net::SocketAddress::parse(argv[1]);
  if (!addr) throw std::invalid_argument(addr.error());
  const long connections = argc == 3 ? std::stol(argv[2]) : -1;
  spindle::WaitGroup open;  // outlives the connections' fibers
  spindle::Runtime runtime;
  return runtime.run([&] {
    auto listener = net::TcpListener::bind(*addr).value();
    std::printf("listening on %s\n", listener.local_addr().value().to_string().c_str());
    std::fflush(stdout);
    for (long n = 0; n != connections; ++n) {
      open.add();
      spindle::spawn([stream = listener.accept().value(), &open]() mutable {
        std::array<char, 4096> buf;
        while (auto r = stream.read(buf)) {
          if (*r == 0 || !stream.write_all(std::string_view(buf.data(), *r))) break;
        }
        open.done();
      });
    }
    return open.wait() ? 0 : 1;
  });
} catch (const std::exception& e) {
  std::fprintf(stderr, "echo_server: %s\n", e.what());
  return 1;
}
