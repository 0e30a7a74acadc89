// The life of a connection server, shared by the servers in apps/: its
// command-line flags, its runtime, and its root fiber.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "spindle/net/stream.hpp"

namespace CLI {
class App;
}

namespace spindle::apps {

// `s` seconds (a command-line value) as nanoseconds.
std::chrono::nanoseconds seconds(double s);

// The flags every connection server takes. Plain value.
struct ServerFlags {
  std::string listen;       // --listen host:port
  std::size_t workers = 2;  // --workers
  double idle_s = 60;       // --idle-timeout: seconds a connection may stay silent
  // The --idle-timeout values accepted. Where idle_min_s is 0, an idle_s of 0
  // means no limit.
  double idle_min_s = 0.001;
  double idle_max_s = 86400;
  double grace_s = 10;  // --grace: seconds a stop waits for open connections
  // --max-connections: open at once; 0, the default, takes as many as the
  // descriptor limit leaves room for (fd_limit.hpp).
  std::size_t max_connections = 0;

  // Adds the five flags to `app`, with the current values as defaults.
  void add_to(CLI::App& app);
  std::chrono::nanoseconds idle_timeout() const;
};

// What a server does beside handling connections. Plain value; every member
// may be left empty.
struct ServerHooks {
  // The name of the accepting fiber in a fiber dump.
  std::string acceptor_name;
  // Runs on the root fiber once the address is bound, before the first accept:
  // sets up what the connections share. Returns text for the banner's
  // parentheses ("dir data, 3 keys"), or nullopt when the server cannot start
  // (having said why on stderr).
  std::function<std::optional<std::string>()> start;
  // Runs on the root fiber after a stop, once the connections have ended or
  // the grace period is over (those still open run on until the runtime ends
  // them). False when it failed (having said why on stderr).
  std::function<bool()> stop;
};

// main() of a connection server once its flags are parsed. Blocks SIGINT and
// SIGTERM, raises the soft descriptor limit to the hard one and sets the
// connection limit (fd_limit.hpp), starts a runtime of flags.workers workers whose sockets close
// with a FIN (the server often closes first, and zero linger would discard replies still in the
// send queue), binds flags.listen, runs hooks.start, prints "<program>: listening on <address>
// ([<start's text>, ]<n> workers, up to <m> connections)", and accepts until SIGINT or SIGTERM.
// Each connection runs handle(stream) on a fiber of its own and is closed after (accept_loop.hpp:
// beyond flags.max_connections a connection is closed at once; a failed accept is retried). On
// the signal it stops accepting, shuts down the read side of every open connection, waits up to
// flags.grace_s for them to end, and runs hooks.stop. Returns the exit code: 0, or 1 if the
// address cannot be bound, the runtime cannot start or a hook fails (the reason printed on
// stderr). Call from the main thread, before any other thread exists.
int run_server(std::string_view program, const ServerFlags& flags,
               const std::function<void(net::TcpStream&)>& handle, const ServerHooks& hooks = {});

}  // namespace spindle::apps
