// TlsStream between two fibers: handshakes, echo, large transfers, the
// plaintext buffer, ALPN, close_notify.
#include <algorithm>
#include <array>
#include <numeric>
#include <string>
#include <vector>

#include "context_state.hpp"
#include "tls_test_support.hpp"

using namespace std::chrono_literals;
using spindle::errc;
namespace net = spindle::net;
namespace tls = spindle::tls;

TEST_CASE("a TLS handshake and an echo between two fibers", "[tls][stream]") {
  const auto server_ctx = spindle::test::server_context();
  const auto client_ctx = spindle::test::client_context();
  spindle::test::on_workers([=] {
    auto [client, server] = spindle::test::tls_pair(server_ctx, client_ctx);
    CHECK(client.version() == server.version());
    CHECK(client.version() == "TLSv1.3");
    CHECK(server.server_name() == "localhost");  // SNI
    CHECK(client.alpn().empty());
    auto echo = spindle::spawn([&server] {
      std::array<char, 256> buf;
      std::size_t total = 0;
      for (;;) {
        auto n = server.read(buf).value();
        if (n == 0) {
          (void)server.shutdown(net::Shutdown::kWrite);  // close_notify, then FIN
          return total;
        }
        server.write_all(std::string_view(buf.data(), n)).value();
        total += n;
      }
    });
    for (int i = 0; i < 100; ++i) {
      const std::string msg = "message " + std::to_string(i);
      REQUIRE(client.write_all(msg).has_value());
      std::string back(msg.size(), '\0');
      REQUIRE(client.read_exact(back).has_value());
      REQUIRE(back == msg);
    }
    REQUIRE(client.shutdown(net::Shutdown::kWrite).has_value());
    CHECK(echo.join().value() > 0);
    std::array<char, 4> rest;
    CHECK(client.read(rest).value() == 0);  // the server's close_notify: end of stream
    CHECK(client.read(rest).value() == 0);
    CHECK(client.write_all("late").error() == errc::closed);  // nothing after close_notify
  });
}

TEST_CASE("megabytes cross a TLS stream both ways at once", "[tls][stream]") {
  const auto server_ctx = spindle::test::server_context();
  const auto client_ctx = spindle::test::client_context();
  spindle::test::on_workers([=] {
    auto [client, server] = spindle::test::tls_pair(server_ctx, client_ctx);
    std::vector<char> data(3 << 20);
    std::iota(data.begin(), data.end(), 0);
    // The server reads everything, then answers with it: records of every
    // size, and a write_all larger than the write chunk.
    auto echo = spindle::spawn([&] {
      std::vector<char> got(data.size());
      server.read_exact(got).value();
      server.write_all(std::string_view(got.data(), got.size())).value();
      return got == data;
    });
    for (std::size_t off = 0; off < data.size();) {
      const std::size_t n = std::min<std::size_t>(data.size() - off, 1 + off % 70'000);
      REQUIRE(client.write_all(std::string_view(data.data() + off, n)).has_value());
      off += n;
    }
    std::vector<char> back(data.size());
    REQUIRE(client.read_exact(back).has_value());
    CHECK(echo.join().value());
    const bool same = back == data;  // (Catch would print 3 MiB vectors)
    CHECK(same);
  });
}

TEST_CASE("one fiber reads a TLS stream while another writes it, on both sides at once",
          "[tls][stream]") {
  const auto server_ctx = spindle::test::server_context();
  const auto client_ctx = spindle::test::client_context();
  spindle::test::on_workers([=] {
    auto [client, server] = spindle::test::tls_pair(server_ctx, client_ctx);
    // Each side sends 2 MiB while it receives 2 MiB: neither finishes its
    // writes unless its reads go on meanwhile (the socket buffers fill).
    std::vector<char> up(2 << 20), down(2 << 20);
    std::iota(up.begin(), up.end(), 1);
    std::iota(down.begin(), down.end(), 7);
    auto send = [](tls::TlsStream& s, const std::vector<char>& data) {
      return spindle::spawn([&s, &data] {
        for (std::size_t off = 0; off < data.size(); off += 100'000) {
          const std::size_t n = std::min<std::size_t>(100'000, data.size() - off);
          s.write_all(std::string_view(data.data() + off, n)).value();
        }
      });
    };
    auto receive = [](tls::TlsStream& s, const std::vector<char>& expected) {
      return spindle::spawn([&s, &expected] {
        std::vector<char> got(expected.size());
        s.read_exact(got).value();
        return got == expected;
      });
    };
    auto client_send = send(client, up);
    auto server_send = send(server, down);
    auto server_receive = receive(server, up);
    auto client_receive = receive(client, down);
    client_send.join().value();
    server_send.join().value();
    CHECK(server_receive.join().value());
    CHECK(client_receive.join().value());
  });
}

TEST_CASE("a TLS stream's buffer: peek, fill and consume", "[tls][stream]") {
  const auto server_ctx = spindle::test::server_context();
  const auto client_ctx = spindle::test::client_context();
  spindle::test::on_workers(
      [=] {
        auto [client, server] = spindle::test::tls_pair(server_ctx, client_ctx);
        CHECK(server.peek().empty());
        REQUIRE(client.write_all("abcdef").has_value());
        while (server.peek().size() < 6) REQUIRE(server.fill().value() > 0);
        CHECK(spindle::test::text(server.peek()) == "abcdef");
        CHECK(spindle::test::text(server.peek(2)) == "ab");
        std::array<char, 2> two;
        CHECK(server.read(two).value() == 2);
        server.consume(1);
        CHECK(spindle::test::text(server.peek()) == "def");
        std::array<char, 8> more;
        CHECK(server.read(more).value() == 3);
        CHECK(server.peek().empty());
        CHECK(server.read(std::span<char>()).value() == 0);
      },
      {1, 2});
}

TEST_CASE("ALPN: the server picks its first protocol the client offers", "[tls][stream]") {
  const auto server_ctx = spindle::test::server_context(spindle::test::certificates().server,
                                                        {.alpn = {"h2", "http/1.1"}});
  const auto offers_both = spindle::test::client_context({.alpn = {"http/1.1", "h2"}});
  const auto offers_other = spindle::test::client_context({.alpn = {"spdy/1"}});
  spindle::test::on_workers(
      [=] {
        auto both = spindle::test::tls_pair(server_ctx, offers_both);
        CHECK(both.client.alpn() == "h2");
        CHECK(both.server.alpn() == "h2");
        auto other = spindle::test::tls_pair(server_ctx, offers_other);  // no protocol in common
        CHECK(other.client.alpn().empty());
      },
      {1});
}

TEST_CASE("min_version: a TLS 1.3 server refuses a client that stops at TLS 1.2", "[tls][stream]") {
  const auto strict = spindle::test::server_context(spindle::test::certificates().server,
                                                    {.min_version = tls::Version::kTls13});
  const auto lenient = spindle::test::server_context();
  const auto old_client = spindle::test::client_context();
  // White-box: a client that offers nothing newer than TLS 1.2.
  SSL_CTX_set_max_proto_version(old_client.state().ctx, TLS1_2_VERSION);
  spindle::test::on_workers(
      [=] {
        auto refused = spindle::test::handshakes(strict, old_client);
        REQUIRE_FALSE(refused.client.has_value());
        CHECK(refused.client.error().category() == tls::openssl_category());
        CHECK_THAT(refused.client.error().message(), Catch::Contains("protocol version"));
        REQUIRE_FALSE(refused.server.has_value());
        auto fine = spindle::test::tls_pair(lenient, old_client);
        CHECK(fine.client.version() == "TLSv1.2");
        REQUIRE(fine.client.write_all("over 1.2").has_value());
        std::array<char, 8> buf;
        REQUIRE(fine.server.read_exact(buf).has_value());
        CHECK(std::string(buf.data(), buf.size()) == "over 1.2");
      },
      {1, 2});
}

TEST_CASE("the client's host name may be an IP address literal", "[tls][stream]") {
  const auto server_ctx = spindle::test::server_context();
  const auto client_ctx = spindle::test::client_context();
  spindle::test::on_workers(
      [=] {
        auto pair = spindle::test::tls_pair(server_ctx, client_ctx, "127.0.0.1");
        CHECK(pair.server.server_name().empty());  // no SNI for an address
        REQUIRE(pair.client.write_all("x").has_value());
        std::array<char, 1> one;
        CHECK(pair.server.read(one).value() == 1);
      },
      {1});
}

TEST_CASE("a TLS stream not connected says closed", "[tls][stream]") {
  spindle::test::run([] {
    tls::TlsStream s;
    std::array<char, 4> buf;
    CHECK(s.read(buf).error() == errc::closed);
    CHECK(s.write_all("x").error() == errc::closed);
    CHECK(s.fill().error() == errc::closed);
    CHECK_FALSE(s.is_open());
    CHECK_FALSE(s.kernel_offload());
    CHECK(s.version().empty());
  });
}
