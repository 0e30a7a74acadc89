// serve(): one client connection: read, parse, run, wait for the log, reply.
#pragma once

#include <chrono>
#include <spindle/net/stream.hpp>

#include "commands.hpp"
#include "log.hpp"
#include "resp.hpp"

namespace kv {

// How long a client may take. Zero: no limit. Plain value.
struct Timeouts {
  // Silent between commands (--idle-timeout; redis's `timeout`, off by default).
  std::chrono::nanoseconds idle{0};
  // From a command's first byte to its last (--command-timeout): a client
  // that trickles a command (slowloris) is closed.
  std::chrono::nanoseconds command = std::chrono::seconds(30);
};

// Serves `stream` (the caller closes it after) until the client closes it, sends bad protocol input
// (it gets a RESP error, then the connection closes), stays silent or trickles a command past
// `timeouts` (the connection closes), or the fiber is aborted. Pipelined commands are run in a
// batch; their replies go out together once the log holds every change made so far (see Log::wait),
// so no reply, not even a GET's, shows data that a crash could still take back. Suspends: on the
// socket, the keyspace and the log.
void serve(spindle::net::TcpStream& stream, Commands& commands, Log& log, const Limits& limits,
           const Timeouts& timeouts);

}  // namespace kv
