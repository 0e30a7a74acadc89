#include <sys/un.h>

#include <cstddef>
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
  ss.ss_family = AF_PACKET;
  auto a = SocketAddress::from_sockaddr(reinterpret_cast<sockaddr*>(&ss), sizeof ss);
  REQUIRE_FALSE(a.has_value());
  CHECK_THAT(a.error(), Catch::Contains("not IPv4, IPv6 or Unix"));
  const SocketAddress v6 = SocketAddress::loopback_v6(99);
  CHECK(SocketAddress::from_sockaddr(v6.data(), v6.size()).value() == v6);
}

TEST_CASE("Unix addresses: paths, abstract names and unnamed parse, print and compare",
          "[net][address][unix]") {
  constexpr auto kHeader = offsetof(sockaddr_un, sun_path);
  auto path = SocketAddress::parse("/run/app.sock");
  REQUIRE(path.has_value());
  CHECK(path->is_unix());
  CHECK(path->is_unix_path());
  CHECK_FALSE(path->is_ip());
  CHECK(path->unix_name() == "/run/app.sock");
  CHECK(path->to_string() == "/run/app.sock");
  CHECK(path->ip_string() == "/run/app.sock");
  CHECK(path->port() == 0);
  CHECK(path->size() == kHeader + 14);  // the path and its NUL
  CHECK(*path == SocketAddress::unix_path("/run/app.sock").value());
  CHECK(*path != SocketAddress::unix_path("/run/app.sock2").value());
  path->set_port(80);  // no port to set
  CHECK(path->port() == 0);

  auto relative = SocketAddress::parse("unix:app.sock");
  REQUIRE(relative.has_value());
  CHECK(relative->unix_name() == "app.sock");
  CHECK(relative->to_string() == "unix:app.sock");
  CHECK(SocketAddress::parse(relative->to_string()).value() == *relative);
  CHECK(SocketAddress::parse("unix:/run/app.sock").value() == *path);

  auto abstract = SocketAddress::parse("@spindle-test");
  REQUIRE(abstract.has_value());
  CHECK(abstract->is_unix_abstract());
  CHECK(abstract->unix_name() == "spindle-test");
  CHECK(abstract->to_string() == "@spindle-test");
  CHECK(abstract->size() == kHeader + 1 + 12);  // a NUL and the name, no terminator
  CHECK(reinterpret_cast<const sockaddr_un*>(abstract->data())->sun_path[0] == '\0');
  CHECK(SocketAddress::parse("unix:@spindle-test").value() == *abstract);
  CHECK(SocketAddress::parse(abstract->to_string()).value() == *abstract);
  CHECK(*abstract != SocketAddress::unix_path("spindle-test").value());
  CHECK(*abstract != SocketAddress::unix_abstract("spindle-tes").value());
  const std::string_view with_nul("a\0b", 3);
  CHECK(SocketAddress::unix_abstract(with_nul).value().unix_name() == with_nul);

  const SocketAddress unnamed = SocketAddress::unix_unnamed();
  CHECK(unnamed.is_unix_unnamed());
  CHECK(unnamed.size() == kHeader);
  CHECK(unnamed.to_string() == "(unnamed)");
  CHECK(unnamed.unix_name().empty());
  CHECK(unnamed != SocketAddress::unix_abstract("").value());
  CHECK(unnamed != SocketAddress());

  // What the kernel writes: a path with its NUL counted or not, a bare family.
  for (const SocketAddress& a : {*path, *abstract, unnamed}) {
    INFO(a.to_string());
    CHECK(SocketAddress::from_sockaddr(a.data(), a.size()).value() == a);
  }
  CHECK(SocketAddress::from_sockaddr(path->data(), path->size() - 1).value() == *path);
}

TEST_CASE("Unix address errors name the path and sun_path's limit", "[net][address][unix]") {
  const std::string longest(SocketAddress::kMaxUnixPath, 'x');
  CHECK(SocketAddress::kMaxUnixPath == 107);
  CHECK(SocketAddress::unix_path("/" + longest.substr(1)).value().unix_name().size() == 107);
  CHECK(SocketAddress::unix_abstract(longest).has_value());
  auto too_long = SocketAddress::unix_path("/" + longest);
  REQUIRE_FALSE(too_long.has_value());
  CHECK_THAT(too_long.error(), Catch::Contains("108 bytes, longer than the 107"));
  CHECK_THAT(too_long.error(), Catch::Contains("sun_path"));
  CHECK_THAT(too_long.error(), Catch::Contains("'/" + longest + "'"));
  CHECK_THAT(SocketAddress::unix_abstract(longest + "y").error(),
             Catch::Contains("abstract socket name is 108 bytes"));
  require_parse_error("unix:", "empty Unix socket path");
  require_parse_error("unix:/" + longest, "longer than the 107");
  require_parse_error("@" + longest + "y", "longer than the 107");
  CHECK_THAT(SocketAddress::unix_path(std::string_view("/a\0b", 4)).error(),
             Catch::Contains("NUL byte"));
  CHECK_FALSE(SocketAddress::parse_ip("/run/app.sock").has_value());
}
