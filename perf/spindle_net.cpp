// The echo workload's spindle server: net/'s TcpListener and TcpStream on one
// worker, one fiber per connection running a plain read/write loop (as
// apps/echo does), with net/'s default timeouts and pooled receives.

#include <cstdint>
#include <functional>
#include <spindle/spindle.hpp>
#include <string_view>
#include <system_error>

#include "echo.hpp"
#include "workloads.hpp"

namespace spindle::perf {
namespace {

// Echoes until the client closes or resets the connection. Each request
// arrives in a buffer of the worker's receive pool, given back once echoed:
// a connection waiting for its next request holds no buffer.
void echo(net::TcpStream& stream) {
  for (;;) {
    auto got = stream.read_pooled();
    if (!got || got->empty()) return;
    if (!stream.write_all(got->view())) return;
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
