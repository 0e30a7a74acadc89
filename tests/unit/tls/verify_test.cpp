// Peer verification: what a client refuses, and what each side is told.
#include <openssl/x509_vfy.h>

#include <array>
#include <string>

#include "tls_test_support.hpp"

namespace tls = spindle::tls;

namespace {

// The client's handshake against a server showing `pair`: its error.
std::error_code refused(const spindle::test::CertificatePair& pair,
                        std::error_code* server_error = nullptr) {
  const auto server_ctx = spindle::test::server_context(pair);
  const auto client_ctx = spindle::test::client_context();
  std::error_code client_error;
  spindle::test::on_workers(
      [&] {
        auto h = spindle::test::handshakes(server_ctx, client_ctx);
        REQUIRE_FALSE(h.client.has_value());
        REQUIRE_FALSE(h.server.has_value());
        client_error = h.client.error();
        if (server_error) *server_error = h.server.error();
      },
      {1, 2});
  return client_error;
}

}  // namespace

TEST_CASE("a client refuses a certificate for another host name", "[tls][verify]") {
  std::error_code server_error;
  const auto e = refused(spindle::test::certificates().wrong_host, &server_error);
  CHECK(tls::is_verify_error(e));
  CHECK(e.value() == X509_V_ERR_HOSTNAME_MISMATCH);
  CHECK(e.message() == "tls: certificate verification failed: hostname mismatch");
  // The client's alert tells the server why.
  CHECK(server_error.category() == tls::openssl_category());
  CHECK_THAT(server_error.message(), Catch::Contains("alert"));
}

TEST_CASE("a client refuses an expired certificate", "[tls][verify]") {
  const auto e = refused(spindle::test::certificates().expired);
  CHECK(tls::is_verify_error(e));
  CHECK(e.value() == X509_V_ERR_CERT_HAS_EXPIRED);
  CHECK(e.message() == "tls: certificate verification failed: certificate has expired");
}

TEST_CASE("a client refuses a certificate from an unknown CA", "[tls][verify]") {
  std::error_code server_error;
  const auto e = refused(spindle::test::certificates().unknown_ca, &server_error);
  CHECK(tls::is_verify_error(e));
  CHECK(e.value() == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY);
  CHECK_THAT(e.message(), Catch::Contains("unable to get local issuer certificate"));
  CHECK_THAT(server_error.message(), Catch::Contains("unknown ca"));
}

TEST_CASE("a client that does not verify connects to any server", "[tls][verify]") {
  const auto server_ctx = spindle::test::server_context(spindle::test::certificates().expired);
  const auto client_ctx = tls::Context::client({.verify = tls::Verify::kOff});
  spindle::test::on_workers(
      [=] {
        auto pair = spindle::test::tls_pair(server_ctx, client_ctx, "any.example");
        REQUIRE(pair.client.write_all("hi").has_value());
        std::array<char, 2> buf;
        REQUIRE(pair.server.read_exact(buf).has_value());
      },
      {1});
}

TEST_CASE("a verifying client needs a host name", "[tls][verify]") {
  const auto server_ctx = spindle::test::server_context();
  const auto client_ctx = spindle::test::client_context();
  spindle::test::run([&] {
    auto listener =
        spindle::net::TcpListener::bind(spindle::net::SocketAddress::loopback_v4()).value();
    auto tcp = spindle::net::TcpStream::connect(listener.local_addr().value()).value();
    auto r = tls::TlsStream::connect(client_ctx, std::move(tcp), "");
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == tls::errc::no_host_name);
    CHECK(tcp.is_open());  // a failed handshake leaves the socket with the caller
  });
}

TEST_CASE("a server that verifies clients wants their certificate", "[tls][verify]") {
  const auto& certs = spindle::test::certificates();
  const auto server_ctx = spindle::test::server_context(
      certs.server, {.ca_file = certs.ca, .verify = tls::Verify::kOn});
  const auto anonymous = spindle::test::client_context();
  const auto with_certificate = spindle::test::client_context(
      {.certificate_chain_file = certs.client.certificate, .private_key_file = certs.client.key});
  spindle::test::on_workers(
      [=] {
        auto h = spindle::test::handshakes(server_ctx, anonymous);
        REQUIRE_FALSE(h.server.has_value());
        CHECK_THAT(h.server.error().message(), Catch::Contains("certificate"));
        auto pair = spindle::test::tls_pair(server_ctx, with_certificate);
        REQUIRE(pair.client.write_all("mutual").has_value());
        std::array<char, 6> buf;
        REQUIRE(pair.server.read_exact(buf).has_value());
      },
      {1, 2});
}
