#include <netdb.h>

#include <algorithm>
#include <string>

#include "net_test_support.hpp"

namespace net = spindle::net;

// Only literals and "localhost" (from /etc/hosts): a test must not send DNS
// queries off this machine.
TEST_CASE("resolve returns literals without a lookup", "[net][resolve]") {
  spindle::test::on_workers(
      [] {
        auto v4 = net::resolve("127.0.0.1", 80).value();
        REQUIRE(v4.size() == 1);
        CHECK(v4[0] == net::SocketAddress::loopback_v4(80));
        auto v6 = net::resolve("[::1]", 443).value();
        REQUIRE(v6.size() == 1);
        CHECK(v6[0] == net::SocketAddress::loopback_v6(443));
      },
      {1, 2});
}

TEST_CASE("resolve looks localhost up on the blocking pool", "[net][resolve]") {
  spindle::test::on_workers(
      [] {
        auto r = net::resolve("localhost", 8080);
        REQUIRE(r.has_value());
        REQUIRE_FALSE(r->empty());
        CHECK(std::all_of(r->begin(), r->end(), [](const net::SocketAddress& a) {
          return a.port() == 8080 && (a == net::SocketAddress::loopback_v4(8080) ||
                                      a == net::SocketAddress::loopback_v6(8080));
        }));
      },
      {1, 2});
}

TEST_CASE("resolve errors carry getaddrinfo's message", "[net][resolve]") {
  const std::error_code e(EAI_NONAME, net::resolve_category());
  CHECK(std::string(e.category().name()) == "getaddrinfo");
  CHECK_FALSE(e.message().empty());
}
