// The echo workload's frame, the same for both servers: the server runs in a
// forked process pinned to CPU 0; the measurement's process pins itself to
// CPU 1 and drives it with the closed-loop client (echo_client.hpp). The row
// has req/s, p50/p99 latency, and the server's CPU time per request, which
// is what separates servers once one client core is the bottleneck.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>

#include "row.hpp"
#include "workloads.hpp"

namespace spindle::perf {

// An echo server: binds 127.0.0.1 on a free port, calls listening(port) once
// connections can arrive, then serves until it is killed. It runs in a
// process of its own (so it may start threads); throwing fails the run.
using EchoServer = std::function<void(const std::function<void(std::uint16_t port)>& listening)>;

// Raises RLIMIT_NOFILE for `connections`, starts `serve`, runs the client,
// checks the server is still alive, kills and reaps it. The row's cpu_s is
// the server's CPU time in the window; its workers is 1 (the server's).
Row measure_echo(const Params& p, std::size_t connections, std::string_view impl,
                 const EchoServer& serve);

}  // namespace spindle::perf
