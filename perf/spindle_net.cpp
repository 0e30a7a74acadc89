// The echo workload's spindle server: net/'s TcpListener and TcpStream on one
// worker, one fiber per connection running a plain read/write loop (as
// apps/echo does), with net/'s default timeouts and read buffer.

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <spindle/spindle.hpp>
#include <string_view>
#include <system_error>

#include "echo.hpp"
#include "workloads.hpp"

namespace spindle::perf {
namespace {

// Echoes until the client closes or resets the connection. The buffer is on
// the heap, as the raw loop's and apps/echo's are.
void echo(net::TcpStream& stream) {
  constexpr std::size_t kBuf = 16 * 1024;
  const auto buf = std::make_unique_for_overwrite<char[]>(kBuf);
  for (;;) {
    auto n = stream.read(std::span<char>(buf.get(), kBuf));
    if (!n || *n == 0) return;
    if (!stream.write_all(std::string_view(buf.get(), *n))) return;
  }
}

void serve(const Params& p, IoBackendKind backend,
           const std::function<void(std::uint16_t)>& listening) {
  Runtime rt(Config{.workers = 1, .io_backend = backend, .stack_size = p.stack_size});
  rt.run([&listening] {
    auto listener = net::TcpListener::bind(net::SocketAddress::loopback_v4()).value();
    listening(listener.local_addr().value().port());
    for (;;) {
      auto conn = listener.accept();
      if (!conn) throw std::system_error(conn.error(), "echo server: accept");
      // The root never ends, so its children are never aborted; the handle is
      // dropped (detached).
      spindle::spawn([stream = std::move(*conn)]() mutable { echo(stream); });
    }
  });
}

}  // namespace

Row spindle_echo(const Params& p, std::size_t connections, IoBackendKind backend) {
  return measure_echo(p, connections, "spindle",
                      [&p, backend](const std::function<void(std::uint16_t)>& listening) {
                        serve(p, backend, listening);
                      });
}

}  // namespace spindle::perf
