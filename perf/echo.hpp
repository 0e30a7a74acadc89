// The echo workload's frame, the same for both servers: the server runs in a
// forked process pinned to CPU 0; the measurement's process pins itself to
// CPU 1 and drives it with the closed-loop client (echo_client.hpp). The row
// has req/s, p50/p99 latency, and the server's CPU time per request, which
// is what separates servers once one client core is the bottleneck.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "measure.hpp"
#include "row.hpp"
#include "unique_fd.hpp"
#include "workloads.hpp"

namespace spindle::perf {

// The CPUs of the server workloads: the server on one, the load generator on
// the other.
inline constexpr int kServerCpu = 0;
inline constexpr int kClientCpu = 1;

// Pins the calling thread, and every thread and program it starts later, to
// `cpu`. Throws std::system_error naming the CPUs the workloads need.
void pin_to_cpu(int cpu);

// A raw loop's connection, by fd: its buffer (as large as the spindle
// server's read buffer) and how much of what the last receive brought went
// back out.
inline constexpr unsigned kEchoBuffer = 16 * 1024;
struct EchoConn {
  std::unique_ptr<char[]> buf;  // null: no connection on this fd
  unsigned len = 0;             // bytes the last receive brought
  unsigned sent = 0;            // of them, sent so far
};

// An echo server: binds 127.0.0.1 on a free port, calls listening(port) once
// connections can arrive, then serves until it is killed. It runs in a
// process of its own (so it may start threads); throwing fails the run.
using EchoServer = std::function<void(const std::function<void(std::uint16_t port)>& listening)>;

// Raises RLIMIT_NOFILE for `connections`, starts `serve`, runs the client,
// checks the server is still alive, kills and reaps it. The row's cpu_s is
// the server's CPU time in the window; its workers is 1 (the server's).
Row measure_echo(const Params& p, std::size_t connections, std::string_view impl,
                 const EchoServer& serve);

// A listening socket on 127.0.0.1 on a free port (set in `port`), made with
// `socket_flags` (SOCK_NONBLOCK) besides SOCK_CLOEXEC, with a backlog as
// large as net.core.somaxconn allows (as net::ListenOptions). Throws
// std::system_error.
UniqueFd listen_loopback(std::uint16_t& port, int socket_flags);

}  // namespace spindle::perf
