// spindle::http's client against spindle-http, over HTTP and HTTPS: replies
// read whole, one connection kept for many requests, HEAD, and a server
// certificate the client does not trust.
#include <catch2/catch.hpp>
#include <spindle/spindle.hpp>
#include <string>

#include "certificates.hpp"
#include "process.hpp"

using spindle::test::Ms;
using spindle::test::Server;
namespace http = spindle::http;
namespace tls = spindle::tls;

namespace {

const std::string kHttp = SPINDLE_HTTP_BIN;

// Four requests through one client: three answered 200, one 404, and a HEAD.
void four_requests(http::Client& client, const std::string& base) {
  for (int i = 0; i < 3; ++i) {
    auto r = client.get(base + "/");
    REQUIRE(r.has_value());
    CHECK(r->status == 200);
    CHECK(r->body == "Hello, World!");
    CHECK(r->header("content-type") == "text/plain");
  }
  auto missing = client.get(base + "/missing").value();
  CHECK(missing.status == 404);
  CHECK(missing.reason == "Not Found");
  auto head = client.request({.method = "HEAD", .url = base + "/"}).value();
  CHECK(head.status == 200);
  CHECK(head.body.empty());
  CHECK(head.header("Content-Length") == "13");
}

template <class F>
void on_runtime(F body) {
  spindle::Runtime runtime(spindle::Config{.workers = 2});
  runtime.run(body);
}

}  // namespace

TEST_CASE("the HTTP client keeps one connection to spindle-http for many requests",
          "[integration][http-client]") {
  Server server(kHttp);
  const std::string base = "http://127.0.0.1:" + std::to_string(server.port());
  on_runtime([&] {
    http::Client client;
    four_requests(client, base);
    CHECK(client.connections_opened() == 1);
    CHECK(client.idle_connections() == 1);
    // The free function: a connection of its own, closed after.
    auto once = http::get(base + "/");
    REQUIRE(once.has_value());
    CHECK(once->body == "Hello, World!");
  });
  CHECK(server.stop() == 0);
}

TEST_CASE("the HTTP client keeps one TLS connection to spindle-http for many requests",
          "[integration][http-client]") {
  const auto& certs = spindle::test::certificates();
  Server server(kHttp, {"--tls-cert", certs.server.certificate, "--tls-key", certs.server.key});
  const std::string base = "https://localhost:" + std::to_string(server.port());
  const auto trusting = tls::Context::client({.ca_file = certs.ca});
  on_runtime([&] {
    http::Client client({.tls = trusting});
    four_requests(client, base);
    CHECK(client.connections_opened() == 1);
    // A client that trusts only the system's store refuses the test CA's certificate.
    http::Client stranger;
    auto refused = stranger.get(base + "/");
    REQUIRE_FALSE(refused.has_value());
    CHECK(tls::is_verify_error(refused.error()));
    CHECK_THAT(refused.error().message(), Catch::Contains("unable to get local issuer"));
  });
  CHECK(server.stop() == 0);
}
