// Helpers for the TLS tests: contexts from the test certificates, and a
// handshake over a loopback connection, from a fiber.
#pragma once

#include <string>
#include <utility>

#include "certificates.hpp"
#include "runtime_harness.hpp"

namespace spindle::test {

// Made before any runtime runs (a Context reads its files when made).
inline tls::Context server_context(const CertificatePair& pair = certificates().server,
                                   tls::ContextOptions options = {}) {
  options.certificate_chain_file = pair.certificate;
  options.private_key_file = pair.key;
  return tls::Context::server(options);
}

inline tls::Context client_context(tls::ContextOptions options = {}) {
  if (options.ca_file.empty()) options.ca_file = certificates().ca;
  return tls::Context::client(options);
}

struct Handshakes {
  Result<tls::TlsStream> client;
  Result<tls::TlsStream> server;
};

// A loopback connection and both sides' handshakes at once. Fiber-only.
inline Handshakes handshakes(const tls::Context& server, const tls::Context& client,
                             std::string host = "localhost") {
  auto listener = net::TcpListener::bind(net::SocketAddress::loopback_v4()).value();
  const auto addr = listener.local_addr().value();
  auto accepting = spawn([&] {
    auto tcp = listener.accept().value();
    return tls::TlsStream::accept(server, std::move(tcp));
  });
  auto c = tls::TlsStream::connect(client, net::TcpStream::connect(addr).value(), host);
  auto s = accepting.join().value();
  return {std::move(c), std::move(s)};
}

struct TlsPair {
  tls::TlsStream client;
  tls::TlsStream server;
};

// handshakes() that must succeed. Fiber-only.
inline TlsPair tls_pair(const tls::Context& server, const tls::Context& client,
                        std::string host = "localhost") {
  auto h = handshakes(server, client, std::move(host));
  REQUIRE(h.client.has_value());
  REQUIRE(h.server.has_value());
  return {std::move(*h.client), std::move(*h.server)};
}

inline std::string text(std::span<const std::byte> b) {
  return {reinterpret_cast<const char*>(b.data()), b.size()};
}

}  // namespace spindle::test
