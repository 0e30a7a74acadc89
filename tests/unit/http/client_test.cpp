// http::Client against scripted servers on fibers: bodies of every framing,
// keep-alive reuse and its retry, redirects, limits, deadlines, HTTPS.
#include <array>
#include <string>

#include "certificates.hpp"
#include "http_test_support.hpp"

using namespace std::chrono_literals;
using spindle::errc;
using spindle::test::read_request;
using spindle::test::ScriptedServer;
namespace http = spindle::http;
namespace net = spindle::net;
namespace tls = spindle::tls;

namespace {

// Answers every request on the connection with `reply`.
auto answer_each(std::string reply) {
  return [reply](net::TcpStream& s) {
    while (!read_request(s).empty()) {
      if (!s.write_all(reply)) return;
    }
  };
}

constexpr std::string_view kHello = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";

}  // namespace

TEST_CASE("a chunked body arrives whole, in pieces, and the connection is reused",
          "[http][client]") {
  spindle::test::on_workers([] {
    ScriptedServer server([](net::TcpStream& s) {
      while (!read_request(s).empty()) {
        // Chunk sizes in hex, an extension, a trailer; sent in pieces.
        for (std::string_view piece :
             {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n", "\r\n5\r\nhel",
              "lo\r\nA;ext=1\r\n, chunked!\r\n", "0\r\nX-Trailer: t\r\n\r\n"}) {
          if (!s.write_all(piece)) return;
          (void)spindle::this_fiber::sleep_for(1ms);
        }
      }
    });
    http::Client client;
    for (int i = 0; i < 3; ++i) {
      auto r = client.get(server.url("/chunks"));
      REQUIRE(r.has_value());
      CHECK(r->status == 200);
      CHECK(r->body == "hello, chunked!");
      CHECK(r->header("transfer-encoding") == "chunked");
    }
    CHECK(client.connections_opened() == 1);
    CHECK(client.idle_connections() == 1);
  });
}

TEST_CASE("Content-Length and read-until-close bodies", "[http][client]") {
  spindle::test::on_workers([] {
    const std::string big(1 << 20, 'b');
    ScriptedServer sized(answer_each(
        "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(big.size()) + "\r\n\r\n" + big));
    ScriptedServer until_close([](net::TcpStream& s) {
      if (read_request(s).empty()) return;
      (void)s.write_all("HTTP/1.0 200 OK\r\n\r\nuntil the end");
      (void)s.shutdown(net::Shutdown::kWrite);
      std::array<char, 64> rest;
      while (s.read(rest).value_or(0) > 0) {
      }
    });
    http::Client client;
    auto r = client.get(sized.url()).value();
    CHECK(r.body.size() == big.size());
    CHECK(r.body == big);
    auto c = client.get(until_close.url()).value();
    CHECK(c.version == 10);
    CHECK(c.body == "until the end");
    CHECK(client.idle_connections() == 1);  // the sized server's; not the one that closed
  });
}

namespace {

// Against a server that answers one request per connection and then ends
// its side of it: a GET on the pooled connection is sent again on a new one,
// and a POST is not sent twice (the server may have acted on it). With
// `keep_reading`, the server keeps the socket open and reads on, so a request
// sent later meets the end of the stream; without, it closes the socket, and
// such a request may meet a reset instead.
void check_closed_pooled_connection(bool keep_reading) {
  ScriptedServer server([keep_reading](net::TcpStream& s) {
    if (read_request(s).empty()) return;
    (void)s.write_all(kHello);
    (void)s.shutdown(net::Shutdown::kWrite);
    std::array<char, 256> rest;
    while (keep_reading && s.read(rest).value_or(0) > 0) {
    }
  });
  http::Client client;
  CHECK(client.get(server.url()).value().body == "hello");
  CHECK(client.get(server.url()).value().body == "hello");  // on a new connection
  CHECK(client.connections_opened() == 2);
  auto post = client.request({.method = "POST", .url = server.url(), .body = "x"});
  REQUIRE_FALSE(post.has_value());
  // No byte of a reply before the end of the stream: closed early.
  if (keep_reading) CHECK(post.error() == http::errc::closed_early);
  CHECK(client.connections_opened() == 2);
}

}  // namespace

TEST_CASE("a pooled connection the server closed is replaced for an idempotent request",
          "[http][client]") {
  spindle::test::on_workers([] { check_closed_pooled_connection(false); });
}

TEST_CASE("a pooled connection the server half-closed is replaced for an idempotent request",
          "[http][client]") {
  spindle::test::on_workers([] { check_closed_pooled_connection(true); });
}

TEST_CASE("a client with no idle connections allowed opens one per request", "[http][client]") {
  spindle::test::on_workers(
      [] {
        ScriptedServer server(answer_each(std::string(kHello)));
        http::Client client({.max_idle_per_origin = 0});
        CHECK(client.get(server.url()).value().body == "hello");
        CHECK(client.get(server.url()).value().body == "hello");
        CHECK(client.connections_opened() == 2);
        CHECK(client.idle_connections() == 0);
      },
      {1});
}

TEST_CASE("redirects are returned unless asked for, and then followed", "[http][client]") {
  spindle::test::on_workers([] {
    ScriptedServer server([](net::TcpStream& s) {
      for (std::string req; !(req = read_request(s)).empty();) {
        std::string reply;
        if (req.starts_with("GET /start ")) {
          reply = "HTTP/1.1 302 Found\r\nLocation: /next\r\nContent-Length: 0\r\n\r\n";
        } else if (req.starts_with("GET /next ")) {
          reply = "HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\narrived";
        } else if (req.starts_with("POST /form ")) {
          reply = "HTTP/1.1 303 See Other\r\nLocation: /next\r\nContent-Length: 0\r\n\r\n";
        } else {  // a loop
          reply = "HTTP/1.1 301 Moved\r\nLocation: /loop\r\nContent-Length: 0\r\n\r\n";
        }
        if (!s.write_all(reply)) return;
      }
    });
    http::Client client;
    auto unfollowed = client.get(server.url("/start")).value();
    CHECK(unfollowed.status == 302);
    CHECK(unfollowed.header("Location") == "/next");
    auto followed = client.get(server.url("/start"), {.max_redirects = 3}).value();
    CHECK(followed.status == 200);
    CHECK(followed.body == "arrived");
    CHECK(followed.url == server.url("/next"));
    auto posted = client.request({.method = "POST", .url = server.url("/form"), .body = "a=1"},
                                 {.max_redirects = 1});
    REQUIRE(posted.has_value());
    CHECK(posted->body == "arrived");  // 303: followed with a GET
    auto looping = client.get(server.url("/loop"), {.max_redirects = 4});
    REQUIRE_FALSE(looping.has_value());
    CHECK(looping.error() == http::errc::too_many_redirects);
  });
}

TEST_CASE("limits: a body too large, a deadline, a reply that is not HTTP", "[http][client]") {
  spindle::test::on_workers(
      [] {
        ScriptedServer large(
            answer_each("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n" + std::string(100, 'x')));
        ScriptedServer silent([](net::TcpStream& s) {
          (void)read_request(s);
          std::array<char, 1> b;
          (void)s.read(b, 60s);
        });
        ScriptedServer garbage(answer_each("SSH-2.0-OpenSSH\r\n\r\n"));
        ScriptedServer interim(answer_each(
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"));
        http::Client client;
        CHECK(client.get(large.url(), {.body_limit = 10}).error() == http::errc::body_too_large);
        const auto began = spindle::Clock::now();
        CHECK(client.get(silent.url(), {.timeout = 100ms}).error() == errc::timed_out);
        CHECK(spindle::Clock::now() - began >= 100ms);
        CHECK(client.get(garbage.url()).error() == http::errc::malformed_response);
        CHECK(client.get(interim.url()).value().body == "hello");
        CHECK(client.get("ftp://x/").error() == http::errc::bad_url);
        auto injected =
            client.request({.url = large.url(), .headers = {{"X-Evil", "a\r\nInjected: yes"}}});
        CHECK(injected.error() == std::errc::invalid_argument);
        // Nothing listens there: the connect's error.
        net::SocketAddress closed_port = net::SocketAddress::loopback_v4();
        {
          auto l = net::TcpListener::bind(closed_port).value();
          closed_port = l.local_addr().value();
        }
        auto refused = http::get("http://" + closed_port.to_string() + "/");
        CHECK(refused.error() == std::errc::connection_refused);
      },
      {1, 2});
}

TEST_CASE("https: the client verifies the server and reuses the TLS connection", "[http][client]") {
  const auto& certs = spindle::test::certificates();
  const auto server_ctx = tls::Context::server(
      {.certificate_chain_file = certs.server.certificate, .private_key_file = certs.server.key});
  const auto client_ctx = tls::Context::client({.ca_file = certs.ca});
  spindle::test::on_workers([=] {
    ScriptedServer server([server_ctx](net::TcpStream& tcp) {
      auto s = tls::TlsStream::accept(server_ctx, std::move(tcp));
      if (!s) return;
      while (!read_request(*s).empty()) {
        if (!s->write_all("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                          "6\r\nsecret\r\n0\r\n\r\n"))
          return;
      }
    });
    http::Client client({.tls = client_ctx});
    const std::string url =
        "https://localhost:" + server.url().substr(server.url().rfind(':') + 1);  // port and "/"
    for (int i = 0; i < 3; ++i) CHECK(client.get(url).value().body == "secret");
    CHECK(client.connections_opened() == 1);
    // The certificate also names 127.0.0.1: a URL with the address verifies too.
    CHECK(client.get(server.url("/", "https")).value().body == "secret");
  });
}
