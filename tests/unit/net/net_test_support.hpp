// Helpers for the net tests: a connected loopback pair, made through the
// library itself (listener + connect), from a fiber; echo loops and the
// round trips that check them, for streams and datagram sockets; a probe for
// IPv6.
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <string>
#include <utility>

#include "runtime_harness.hpp"
#include "skip.hpp"

namespace spindle::test {

struct StreamPair {
  net::TcpStream client;
  net::TcpStream server;
};

// A listener on 127.0.0.1 (or `addr`) with a free port, and one connection
// through it. Fiber-only.
inline StreamPair connected_pair(net::SocketAddress addr = net::SocketAddress::loopback_v4()) {
  auto listener = net::TcpListener::bind(addr).value();
  const auto bound = listener.local_addr().value();
  auto accepting = spawn([&] { return listener.accept(); });
  auto client = net::TcpStream::connect(bound).value();
  auto server = accepting.join().value().value();
  return {std::move(client), std::move(server)};
}

inline std::string text(std::span<const std::byte> b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

// Echoes what `s` reads until end of stream, then shuts down its write side
// (a FIN, not close()'s reset); returns the byte count. Fiber-only.
inline std::size_t echo_until_end(net::StreamSocket& s) {
  std::array<char, 256> buf;
  std::size_t total = 0;
  for (;;) {
    auto n = s.read(buf);
    REQUIRE(n.has_value());
    if (*n == 0) break;
    REQUIRE(s.write_all(std::string_view(buf.data(), *n)).has_value());
    total += *n;
  }
  REQUIRE(s.shutdown(net::Shutdown::kWrite).has_value());
  return total;
}

// Writes `count` numbered messages on `client`, reading each one back whole
// before the next; returns the bytes sent. Fiber-only.
inline std::size_t round_trips(net::StreamSocket& client, int count) {
  std::size_t sent = 0;
  for (int i = 0; i < count; ++i) {
    const std::string msg = "message " + std::to_string(i);
    REQUIRE(client.write_all(msg).has_value());
    std::string back(msg.size(), '\0');
    REQUIRE(client.read_exact(back).has_value());
    REQUIRE(back == msg);
    sent += msg.size();
  }
  return sent;
}

// Answers `count` datagrams on `server` with the same bytes, to their
// senders. Fiber-only.
inline void echo_datagrams(net::DatagramSocket& server, int count) {
  std::array<char, 256> buf;
  for (int i = 0; i < count; ++i) {
    auto got = server.recv_from(buf, std::chrono::seconds(5));
    REQUIRE(got.has_value());
    REQUIRE(server.send_to(std::string_view(buf.data(), got->size), got->from).has_value());
  }
}

// Sends `count` numbered datagrams from `client` to `server` and checks each
// echo and that it came from `server`. Fiber-only.
inline void datagram_round_trips(net::DatagramSocket& client, const net::SocketAddress& server,
                                 int count) {
  for (int i = 0; i < count; ++i) {
    const std::string msg = "datagram " + std::to_string(i);
    REQUIRE(client.send_to(msg, server).value() == msg.size());
    std::array<char, 256> buf;
    auto back = client.recv_from(buf, std::chrono::seconds(5));
    REQUIRE(back.has_value());
    CHECK(back->from == server);
    CHECK_FALSE(back->truncated);
    CHECK(std::string(buf.data(), back->size) == msg);
  }
}

// Skips the test unless a socket of `type` can bind to ::1. Call it outside
// a runtime: SPINDLE_SKIP ends the process.
inline void require_ipv6_loopback(int type) {
  const int fd = ::socket(AF_INET6, type | SOCK_CLOEXEC, 0);
  const auto loopback = net::SocketAddress::loopback_v6();
  const bool ok = fd >= 0 && ::bind(fd, loopback.data(), loopback.size()) == 0;
  if (fd >= 0) ::close(fd);
  if (!ok) SPINDLE_SKIP("IPv6 loopback (::1) is not available here");
}

}  // namespace spindle::test
