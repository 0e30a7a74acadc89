// What a TLS connection does when its peer misbehaves or its fiber is
// aborted: a handshake that stalls, garbage instead of a ClientHello, an
// end of stream without close_notify, and aborts mid-handshake and mid-read.
#include <array>
#include <chrono>
#include <string>

#include "tls_test_support.hpp"

using namespace std::chrono_literals;
using spindle::errc;
namespace net = spindle::net;
namespace tls = spindle::tls;

namespace {

// A listener on loopback and its address. Fiber-only.
struct Loopback {
  net::TcpListener listener = net::TcpListener::bind(net::SocketAddress::loopback_v4()).value();
  net::SocketAddress addr = listener.local_addr().value();
};

// A few bytes of what a ClientHello starts with: a record header announcing
// more than ever comes.
constexpr std::string_view kPartialHello("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11);

}  // namespace

TEST_CASE("a client that stops mid-handshake makes the server's handshake time out",
          "[tls][failure]") {
  const auto server_ctx = spindle::test::server_context();
  spindle::test::on_workers([=] {
    Loopback lo;
    auto stalled = net::TcpStream::connect(lo.addr).value();
    REQUIRE(stalled.write_all(kPartialHello).has_value());
    auto tcp = lo.listener.accept().value();
    const auto began = spindle::Clock::now();
    auto r = tls::TlsStream::accept(server_ctx, std::move(tcp), 100ms);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == errc::timed_out);
    CHECK(spindle::Clock::now() - began >= 100ms);
    // The connection goes back to the caller, who frees it: the client sees it close.
    REQUIRE(tcp.is_open());
    tcp.close();
    std::array<char, 16> buf;
    auto n = stalled.read(buf, 5s);
    CHECK((!n || *n == 0));
  });
}

TEST_CASE("a stalled handshake leaves its worker to the other fibers", "[tls][failure]") {
  const auto server_ctx = spindle::test::server_context();
  const auto client_ctx = spindle::test::client_context();
  // One worker: were OpenSSL to wait for the stalled client's bytes itself,
  // the second connection could never be served.
  spindle::test::on_workers(
      [=] {
        Loopback lo;
        auto stalled = net::TcpStream::connect(lo.addr).value();
        REQUIRE(stalled.write_all(kPartialHello).has_value());
        auto tcp = lo.listener.accept().value();
        std::error_code seen;
        auto waiting = spindle::spawn([&] {
          auto r = tls::TlsStream::accept(server_ctx, std::move(tcp), 60s);
          if (!r) seen = r.error();
        });
        auto pair = spindle::test::tls_pair(server_ctx, client_ctx);
        REQUIRE(pair.client.write_all("served").has_value());
        std::array<char, 6> buf;
        REQUIRE(pair.server.read_exact(buf).has_value());
        CHECK_FALSE(seen);  // still waiting for the rest of the ClientHello
        waiting.abort();
        (void)waiting.join();
        CHECK(seen == errc::aborted);
      },
      {1});
}

TEST_CASE("garbage instead of a ClientHello closes that connection while another is served",
          "[tls][failure]") {
  const auto server_ctx = spindle::test::server_context();
  const auto client_ctx = spindle::test::client_context();
  spindle::test::on_workers([=] {
    Loopback lo;
    // The server: a fiber per connection, each handshaking and echoing one line.
    auto server = spindle::spawn([&] {
      std::vector<spindle::JoinHandle<std::error_code>> conns;
      for (int i = 0; i < 2; ++i) {
        auto tcp = lo.listener.accept().value();
        conns.push_back(spindle::spawn([&server_ctx, tcp = std::move(tcp)]() mutable {
          auto tls = tls::TlsStream::accept(server_ctx, std::move(tcp), 5s);
          if (!tls) return tls.error();
          std::array<char, 5> buf;
          if (auto r = tls->read_exact(buf); !r) return r.error();
          (void)tls->write_all(std::string_view(buf.data(), buf.size()));
          return std::error_code();
        }));
      }
      std::vector<std::error_code> outcomes;
      for (auto& c : conns) outcomes.push_back(c.join().value());
      return outcomes;
    });
    auto garbage = net::TcpStream::connect(lo.addr).value();
    REQUIRE(garbage.write_all("GET / HTTP/1.1\r\nHost: x\r\n\r\n").has_value());
    std::array<char, 64> buf;
    auto n = garbage.read(buf, 5s);  // the server closes it (maybe after an alert)
    while (n && *n > 0) n = garbage.read(buf, 5s);
    auto good =
        tls::TlsStream::connect(client_ctx, net::TcpStream::connect(lo.addr).value(), "localhost")
            .value();
    REQUIRE(good.write_all("hello").has_value());
    std::array<char, 5> back;
    REQUIRE(good.read_exact(back).has_value());
    CHECK(std::string(back.data(), 5) == "hello");
    const auto outcomes = server.join().value();
    CHECK(outcomes[0].category() == tls::openssl_category());  // "http request", "wrong version"
    CHECK_FALSE(outcomes[1]);
  });
}

TEST_CASE("a peer's end of stream without close_notify is truncated", "[tls][failure]") {
  const auto server_ctx = spindle::test::server_context();
  const auto client_ctx = spindle::test::client_context();
  spindle::test::on_workers([=] {
    auto [client, server] = spindle::test::tls_pair(server_ctx, client_ctx);
    REQUIRE(client.write_all("partial").has_value());
    auto tcp = std::move(client).into_tcp();
    REQUIRE(tcp.shutdown(net::Shutdown::kWrite).has_value());  // FIN, no close_notify
    std::array<char, 7> got;
    REQUIRE(server.read_exact(got).has_value());
    auto r = server.read(got);
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error() == tls::errc::truncated);
    CHECK(server.read(got).error() == errc::closed);  // poisoned
  });
}

TEST_CASE("an abort during a TLS handshake returns aborted", "[tls][failure]") {
  const auto server_ctx = spindle::test::server_context();
  spindle::test::on_workers([=] {
    Loopback lo;
    auto silent = net::TcpStream::connect(lo.addr).value();  // never says a word
    auto tcp = lo.listener.accept().value();
    std::error_code seen;  // what the call returned (join() reports the abort itself)
    auto handshake = spindle::spawn([&] {
      auto r = tls::TlsStream::accept(server_ctx, std::move(tcp), 60s);
      if (!r) seen = r.error();
    });
    (void)spindle::this_fiber::sleep_for(spindle::test::kSettle);
    handshake.abort();
    CHECK(handshake.join().error() == errc::aborted);
    CHECK(seen == errc::aborted);
  });
}

TEST_CASE("an abort during a TLS read returns aborted and poisons the read half",
          "[tls][failure]") {
  const auto server_ctx = spindle::test::server_context();
  const auto client_ctx = spindle::test::client_context();
  spindle::test::on_workers([=] {
    auto [client, server] = spindle::test::tls_pair(server_ctx, client_ctx);
    std::error_code seen;  // what the call returned (join() reports the abort itself)
    auto reader = spindle::spawn([&] {
      std::array<char, 16> buf;
      if (auto r = server.read(buf, 60s); !r) seen = r.error();
    });
    (void)spindle::this_fiber::sleep_for(spindle::test::kSettle);
    reader.abort();
    CHECK(reader.join().error() == errc::aborted);
    CHECK(seen == errc::aborted);
    std::array<char, 16> buf;
    CHECK(server.read(buf).error() == errc::closed);
    // The write half still works.
    REQUIRE(server.write_all("still here").has_value());
    std::array<char, 10> got;
    REQUIRE(client.read_exact(got).has_value());
  });
}

TEST_CASE("a TLS read times out and poisons the read half", "[tls][failure]") {
  const auto server_ctx = spindle::test::server_context();
  const auto client_ctx = spindle::test::client_context();
  spindle::test::on_workers(
      [=] {
        auto [client, server] = spindle::test::tls_pair(server_ctx, client_ctx);
        std::array<char, 16> buf;
        CHECK(server.read(buf, 50ms).error() == errc::timed_out);
        CHECK(server.read(buf).error() == errc::closed);
        // A deadline scope applies as it does to TcpStream.
        auto r = spindle::this_fiber::with_timeout(50ms, [&] { return client.read(buf); });
        CHECK(r.error() == errc::timed_out);
      },
      {1, 2});
}
