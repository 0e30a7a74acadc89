#include <string>

#include "runtime_harness.hpp"

using spindle::net::SocketAddress;

namespace {

// parse() fails and its message contains `part`.
void require_parse_error(const std::string& text, const std::string& part) {
  INFO("text: " << text);
  auto a = SocketAddress::parse(text);
  REQUIRE_FALSE(a.has_value());
  const std::string message = a.error();
  CHECK_THAT(message, Catch::Contains(part));
  CHECK_THAT(message, Catch::Contains("'" + text + "'"));
}

}  // namespace

TEST_CASE("IPv4 and IPv6 socket addresses parse and print back", "[net][address]") {
  auto a = SocketAddress::parse("127.0.0.1:8080");
  REQUIRE(a.has_value());
  CHECK(a->is_v4());
  CHECK(a->port() == 8080);
  CHECK(a->ip_string() == "127.0.0.1");
  CHECK(a->to_string() == "127.0.0.1:8080");
  CHECK(*a == SocketAddress::loopback_v4(8080));

  auto b = SocketAddress::parse("[::1]:0");
  REQUIRE(b.has_value());
  CHECK(b->is_v6());
  CHECK(b->port() == 0);
  CHECK(b->to_string() == "[::1]:0");
  CHECK(*b == SocketAddress::loopback_v6());

  auto c = SocketAddress::parse("[2001:db8::7]:65535");
  REQUIRE(c.has_value());
  CHECK(c->to_string() == "[2001:db8::7]:65535");
  CHECK(SocketAddress::parse(c->to_string()).value() == *c);

  auto z = SocketAddress::parse("[fe80::1%lo]:80");
  REQUIRE(z.has_value());
  CHECK(z->to_string() == "[fe80::1%lo]:80");

  CHECK(SocketAddress().to_string() == "0.0.0.0:0");
  CHECK(SocketAddress::any_v6(7).to_string() == "[::]:7");
  CHECK(SocketAddress::loopback_v4(1) != SocketAddress::loopback_v4(2));
  CHECK(SocketAddress::loopback_v4(1) != SocketAddress::loopback_v6(1));
}

TEST_CASE("address parse errors say what is wrong", "[net][address]") {
  require_parse_error("", "empty");
  require_parse_error("127.0.0.1", "missing ':port'");
  require_parse_error("127.0.0.1:", "missing port");
  require_parse_error("127.0.0.1:http", "not a number");
  require_parse_error("127.0.0.1:65536", "above 65535");
  require_parse_error("127.0.0.1:123456", "not a number");
  require_parse_error("127.0.0.1:-1", "not a number");
  require_parse_error(":80", "missing host");
  require_parse_error("1.2.3:80", "not an IPv4 address");
  require_parse_error("256.0.0.1:80", "not an IPv4 address");
  require_parse_error("localhost:80", "resolve()");
  require_parse_error("::1:80", "brackets");
  require_parse_error("[::1]", "missing ':port'");
  require_parse_error("[::1:80", "closing ']'");
  require_parse_error("[]:80", "empty IPv6");
  require_parse_error("[::g]:80", "not an IPv6 address");
  require_parse_error("[fe80::1%no-such-if0]:80", "unknown network interface");
}

TEST_CASE("parse_ip and parse_host_port", "[net][address]") {
  CHECK(SocketAddress::parse_ip("10.1.2.3", 9).value().to_string() == "10.1.2.3:9");
  CHECK(SocketAddress::parse_ip("::1").value() == SocketAddress::loopback_v6());
  CHECK(SocketAddress::parse_ip("[::1]", 5).value() == SocketAddress::loopback_v6(5));
  CHECK_FALSE(SocketAddress::parse_ip("example.org").has_value());

  auto hp = spindle::net::parse_host_port("example.org:443");
  REQUIRE(hp.has_value());
  CHECK(hp->host == "example.org");
  CHECK(hp->port == 443);
  auto v6 = spindle::net::parse_host_port("[::1]:80");
  REQUIRE(v6.has_value());
  CHECK(v6->host == "::1");
  CHECK_FALSE(spindle::net::parse_host_port("example.org").has_value());
}

TEST_CASE("from_sockaddr rejects other families", "[net][address]") {
  sockaddr_storage ss{};
  ss.ss_family = AF_UNIX;
  auto a = SocketAddress::from_sockaddr(reinterpret_cast<sockaddr*>(&ss), sizeof ss);
  REQUIRE_FALSE(a.has_value());
  CHECK_THAT(a.error(), Catch::Contains("neither IPv4 nor IPv6"));
  const SocketAddress v6 = SocketAddress::loopback_v6(99);
  CHECK(SocketAddress::from_sockaddr(v6.data(), v6.size()).value() == v6);
}
