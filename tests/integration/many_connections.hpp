// Thousands of concurrent connections to a server process, opened one after
// another from the test thread: each is answered as it opens while the
// earlier ones stay open and idle, and each is answered again once all are
// open. Plain blocking sockets, every call bounded by a timeout.
#pragma once

#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fd_limit.hpp"
#include "process.hpp"

namespace spindle::test {

// What Go's and redis-server's stock servers hold on a 2-core machine.
inline constexpr std::size_t kManyConnections = 15'000;
inline constexpr std::size_t kConnectionBlock = 1'000;
// Connections made from one local address before the next (127.0.0.2,
// 127.0.0.3, ...). connect() takes even ephemeral ports first, half of
// ip_local_port_range (32768-60999: 14,116); past them its search for a free
// port slows sharply, a cost of the client's kernel that Go and redis would
// see too.
inline constexpr std::size_t kConnectionsPerSource = 5'000;

// One request on `c` (the `index`-th connection) and a check of its whole
// reply; false on a wrong or missing reply.
using Exchange = std::function<bool(Client& c, std::size_t index)>;

struct ManyConnections {
  std::size_t answered_opening = 0;  // connections answered as they opened
  std::size_t answered_again = 0;    // of those, answered again once all were open
  // The time each block of kConnectionBlock new connections took, in ms.
  std::vector<double> block_ms;
};

// Skips the test, saying so, when this process cannot hold `n` connections
// (and a server started after it, which inherits the raised soft limit).
inline void require_fds_for_connections(std::size_t n) {
  require_fd_limit(n + 128, "holding thousands of concurrent connections");
}

// Connections opened by open_connections(), and what opening them took.
struct Opened {
  std::vector<std::unique_ptr<Client>> clients;  // every one answered, in order
  // The time each block of kConnectionBlock new connections took, in ms.
  std::vector<double> block_ms;
};

// Opens up to `n` connections to 127.0.0.1:`port`, one after another, with
// one exchange on each as it opens while the earlier ones stay open. Stops at
// the first connection that fails. Every connection closes with a reset
// when dropped (no TIME_WAIT left behind).
inline Opened open_connections(int port, std::size_t n, const Exchange& exchange) {
  using Clock = std::chrono::steady_clock;
  Opened r;
  r.clients.reserve(n);
  auto block_start = Clock::now();
  for (std::size_t i = 0; i < n; ++i) {
    std::unique_ptr<Client> c;
    try {
      const auto source = static_cast<in_addr_t>(INADDR_LOOPBACK + 1 + i / kConnectionsPerSource);
      c = std::make_unique<Client>(port, Ms(5'000), source);
    } catch (const std::exception&) {
      break;
    }
    const linger reset{1, 0};
    ::setsockopt(c->fd(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
    if (!exchange(*c, i)) break;
    r.clients.push_back(std::move(c));
    if (r.clients.size() % kConnectionBlock == 0) {
      const auto now = Clock::now();
      r.block_ms.push_back(std::chrono::duration<double, std::milli>(now - block_start).count());
      block_start = now;
    }
  }
  return r;
}

// open_connections(), then one more exchange on each; closes them all.
inline ManyConnections open_many(int port, std::size_t n, const Exchange& exchange) {
  Opened opened = open_connections(port, n, exchange);
  ManyConnections r;
  r.answered_opening = opened.clients.size();
  r.block_ms = std::move(opened.block_ms);
  for (std::size_t i = 0; i < opened.clients.size(); ++i) {
    if (!exchange(*opened.clients[i], i)) break;
    ++r.answered_again;
  }
  return r;
}

// Every connection was answered twice, and the last block of new connections
// took at most three times as long as the first: the cost of a connection
// does not grow with the number already open.
inline void check_many_connections(const ManyConnections& r, std::size_t n) {
  std::string blocks;
  for (double ms : r.block_ms) blocks += std::to_string(static_cast<long>(ms)) + " ";
  INFO("ms per " << kConnectionBlock << " new connections: " << blocks);
  CHECK(r.answered_opening == n);
  CHECK(r.answered_again == n);
  REQUIRE(r.block_ms.size() == n / kConnectionBlock);
  CHECK(r.block_ms.back() <= 3 * r.block_ms.front());
}

}  // namespace spindle::test
