// The echo workload's client: a closed loop over N connections to 127.0.0.1,
// one 64-byte message in flight on each, the next sent as soon as the echo of
// the last is back and checked. One thread, non-blocking sockets, epoll.
#pragma once

#include <time.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace spindle::perf {

inline constexpr std::size_t kEchoMessage = 64;  // bytes per request and per echo

struct EchoClientOptions {
  std::uint16_t port = 0;  // the server's, on 127.0.0.1
  std::size_t connections = 0;
  std::chrono::milliseconds warmup{0};  // load before the window, not counted
  std::chrono::milliseconds window{0};  // the measured load
  clockid_t server_cpu{};               // the server process's CPU-time clock
  // Called once every connection has had one echo and sits idle, before the
  // closed loop starts (to read the server's memory then).
  std::function<void()> on_idle{};
};

struct EchoLoad {
  std::uint64_t requests = 0;      // echoes completed and checked in the window
  double seconds = 0;              // the window's wall time (steady_clock)
  double server_cpu_s = 0;         // the server's CPU time (all threads) in the window
  std::vector<double> latency_us;  // one per request: send to the echo's last byte
};

// Connects every connection, has each echo one message (then on_idle), runs
// the warm-up and the window, closes every
// connection with a reset. A wrong echo byte, a connection the server closes,
// or 5 s without any echo throws PerfError; a failed syscall, system_error.
// Every descriptor is closed on every path.
EchoLoad run_echo_client(const EchoClientOptions& o);

}  // namespace spindle::perf
