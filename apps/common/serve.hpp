// serve(): the life of a connection server on its root fiber, shared by the
// servers in apps/.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string_view>

#include "connection_set.hpp"
#include "spindle/net/listener.hpp"
#include "spindle/sched/config.hpp"
#include "spindle/net/stream.hpp"
#include "stop_signal.hpp"

namespace spindle::apps {

// The runtime configuration of a server: `workers` workers, and sockets
// closed with a FIN rather than zero linger. The server often closes first
// (idle timeout, stop, Connection: close), and an abortive close would discard
// replies still in the socket's send queue.
Config server_config(std::size_t workers);

// What serve() needs to know about the server.
struct ServeOptions {
  std::string_view program;  // the prefix of every line printed
  std::string_view listen;   // the --listen address
  std::size_t workers = 1;   // for the start-up line
  std::chrono::nanoseconds grace{};  // how long a stop waits for open connections
};

// Binds options.listen (printing "<program>: listening on <address> (<n>
// workers)") and accepts on a fiber of its own until SIGINT or SIGTERM (or an
// abort). Each connection runs handle(stream) on a fiber of its own, spawned
// under the root fiber so that it outlives the accepting one, and registered
// in `connections` while it runs; the stream is closed after. A failed accept
// (out of descriptors or memory) is printed and retried 10 ms later. On the
// signal the accepting fiber ends, the listener closes, and `connections` is
// stopped, waiting up to options.grace. Returns the exit code: 0, or 1 if the
// address cannot be bound (the reason printed on stderr). Root fiber only.
// Suspends: for the server's whole life.
int serve(const ServeOptions& options, StopSignal& stop, ConnectionSet& connections,
          const std::function<void(net::TcpStream&)>& handle);

}  // namespace spindle::apps
