// Helpers for the net tests: a connected loopback pair, made through the
// library itself (listener + connect), from a fiber.
#pragma once

#include <string>
#include <utility>

#include "runtime_harness.hpp"

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

}  // namespace spindle::test
