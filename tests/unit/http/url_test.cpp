// http::parse_url and resolve_location: what a URL splits into, what is
// refused, and where redirects point.
#include <catch2/catch.hpp>
#include <spindle/spindle.hpp>

namespace http = spindle::http;

TEST_CASE("parse_url splits http and https URLs", "[http][url]") {
  auto a = http::parse_url("http://example.org/path?q=1#frag").value();
  CHECK_FALSE(a.https);
  CHECK(a.host == "example.org");
  CHECK(a.port == 80);
  CHECK(a.target == "/path?q=1");
  CHECK(a.authority() == "example.org");
  CHECK(a.origin() == "http://example.org");

  auto b = http::parse_url("HTTPS://127.0.0.1:8443").value();
  CHECK(b.https);
  CHECK(b.port == 8443);
  CHECK(b.target == "/");
  CHECK(b.authority() == "127.0.0.1:8443");
  CHECK(b.to_string() == "https://127.0.0.1:8443/");

  auto c = http::parse_url("http://[::1]:8080?x").value();
  CHECK(c.host == "::1");
  CHECK(c.target == "/?x");
  CHECK(c.authority() == "[::1]:8080");
  CHECK(http::parse_url("https://h:443/").value().authority() == "h");
}

TEST_CASE("parse_url refuses what the client cannot use", "[http][url]") {
  for (const char* bad :
       {"example.org/", "ftp://example.org/", "http://", "http://:80/", "http://user@example.org/",
        "http://h:0/", "http://h:65536/", "http://h:8x/", "http://[::1/", "http://h/a b"}) {
    INFO(bad);
    auto r = http::parse_url(bad);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == http::errc::bad_url);
  }
}

TEST_CASE("resolve_location follows absolute, host-relative and path-relative redirects",
          "[http][url]") {
  const auto base = http::parse_url("https://a.example:8443/dir/page?x=1").value();
  CHECK(http::resolve_location(base, "http://b.example/new").value().to_string() ==
        "http://b.example/new");
  CHECK(http::resolve_location(base, "//c.example/p").value().to_string() == "https://c.example/p");
  CHECK(http::resolve_location(base, "/root?y").value().to_string() ==
        "https://a.example:8443/root?y");
  CHECK(http::resolve_location(base, "other#f").value().to_string() ==
        "https://a.example:8443/dir/other");
}
