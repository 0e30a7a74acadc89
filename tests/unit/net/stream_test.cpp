#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "net_test_support.hpp"
#include "skip.hpp"

using namespace std::chrono_literals;
using spindle::errc;
namespace net = spindle::net;
namespace tf = spindle::this_fiber;

TEST_CASE("echo round trips", "[net][stream]") {
  spindle::test::on_workers([] {
    auto [client, server] = spindle::test::connected_pair();
    auto echo = spindle::spawn([&server] { return spindle::test::echo_until_end(server); });
    const std::size_t sent = spindle::test::round_trips(client, 200);
    REQUIRE(client.shutdown(net::Shutdown::kWrite).has_value());
    CHECK(echo.join().value() == sent);
    std::array<char, 4> rest;
    CHECK(client.read(rest).value() == 0);  // the server closed: end of stream
  });
}

TEST_CASE("read returns what has arrived and not what was asked", "[net][stream]") {
  spindle::test::on_workers([] {
    auto [client, server] = spindle::test::connected_pair();
    REQUIRE(client.write_all("0123456789").has_value());
    std::array<char, 100> buf{};
    const std::size_t n = server.read(buf).value();
    CHECK(n >= 1);
    CHECK(n <= 10);
    std::size_t got = n;
    while (got < 10) got += server.read(std::span(buf).subspan(got)).value();
    CHECK(std::string(buf.data(), 10) == "0123456789");
    // A read smaller than what is buffered leaves the rest for the next one.
    REQUIRE(client.write_all("abcdef").has_value());
    REQUIRE(server.fill().value() >= 1);
    while (server.peek().size() < 6) REQUIRE(server.fill().value() > 0);
    CHECK(spindle::test::text(server.peek()) == "abcdef");
    CHECK(spindle::test::text(server.peek(2)) == "ab");
    std::array<char, 2> two;
    CHECK(server.read(two).value() == 2);
    CHECK(std::string(two.data(), 2) == "ab");
    server.consume(1);
    CHECK(spindle::test::text(server.peek()) == "def");
    std::array<char, 8> more;
    CHECK(server.read(more).value() == 3);
    CHECK(server.peek().empty());
    CHECK(server.read(std::span<char>()).value() == 0);  // empty buffer: no I/O
  });
}

TEST_CASE("a read after a reply returns bytes the peer sent before the reply", "[net][stream]") {
  spindle::test::on_workers([] {
    auto [client, server] = spindle::test::connected_pair();
    for (char c = 'a'; c < 'a' + 20; ++c) {
      REQUIRE(client.write_all(std::string(1, c)).has_value());
      std::array<char, 16> buf{};
      REQUIRE(server.read(buf).value() == 1);  // the socket is drained
      // The next request is already on its way when the reply goes out: the
      // receive after the reply (poll first) finds it as well.
      REQUIRE(client.write_all(std::string(1, static_cast<char>(c + 1))).has_value());
      REQUIRE(server.write_all(std::string(1, c)).has_value());
      REQUIRE(server.read(buf).value() == 1);
      CHECK(buf[0] == c + 1);
      std::array<char, 1> reply{};
      REQUIRE(client.read_exact(reply).has_value());
      CHECK(reply[0] == c);
    }
  });
}

TEST_CASE("read_exact assembles a message across packet boundaries", "[net][stream]") {
  spindle::test::on_workers([] {
    auto [client, server] = spindle::test::connected_pair();
    std::vector<char> expected(100'000);
    std::iota(expected.begin(), expected.end(), 0);
    auto writer = spindle::spawn([&] {
      // Pieces of awkward sizes, with pauses, so the reader sees many packets.
      std::size_t off = 0;
      for (std::size_t piece : {1, 7, 4096, 3, 65536, 1000}) {
        REQUIRE(client.write_all(std::string_view(expected.data() + off, piece)).has_value());
        off += piece;
        (void)tf::sleep_for(1ms);
      }
      REQUIRE(client.write_all(std::string_view(expected.data() + off, expected.size() - off))
                  .has_value());
    });
    std::array<char, 5> head;
    REQUIRE(server.read_exact(head).has_value());  // small: through the buffer
    std::vector<char> body(expected.size() - head.size());
    REQUIRE(server.read_exact(body).has_value());  // larger than the buffer: direct
    writer.join().value();
    CHECK(std::equal(head.begin(), head.end(), expected.begin()));
    CHECK(std::equal(body.begin(), body.end(), expected.begin() + head.size()));
  });
}

TEST_CASE("a deadline scope cuts a read with the default timeout short and poisons the read half",
          "[net][stream][deadline_scope]") {
  spindle::test::on_workers([] {
    auto [client, server] = spindle::test::connected_pair();
    std::array<char, 8> buf{};
    const auto t0 = spindle::Clock::now();
    auto r = spindle::this_fiber::with_timeout(30ms, [&] { return server.read(buf); });
    REQUIRE_FALSE(r);
    CHECK(r.error() == errc::timed_out);
    CHECK(spindle::Clock::now() - t0 >= 30ms);
    CHECK(server.read(buf).error() == errc::closed);
    // The write half is not poisoned: the reply still goes out.
    REQUIRE(server.write_all("ok").has_value());
    CHECK(client.read(buf).value() == 2);
  });
}

TEST_CASE("read_exact reports end of stream as closed and poisons the read half", "[net][stream]") {
  spindle::test::on_workers([] {
    auto [client, server] = spindle::test::connected_pair();
    REQUIRE(client.write_all("abc").has_value());
    REQUIRE(client.shutdown(net::Shutdown::kWrite).has_value());
    std::array<char, 8> buf;
    auto r = server.read_exact(buf);
    REQUIRE_FALSE(r);
    CHECK(r.error() == errc::closed);
    CHECK(server.read(buf).error() == errc::closed);
    // The write half is independent.
    CHECK(server.write_all("still open").has_value());
  });
}

TEST_CASE("a peer reset mid-read fails the read with ECONNRESET", "[net][stream]") {
  spindle::test::on_workers([] {
    auto [client, server] = spindle::test::connected_pair();
    auto reader = spindle::spawn([&server] {
      std::array<char, 64> buf;
      auto first = server.read(buf);   // gets the first bytes
      auto second = server.read(buf);  // blocked when the reset comes
      return std::pair(first, second);
    });
    REQUIRE(client.write_all("x").has_value());
    (void)tf::sleep_for(spindle::test::kSettle);
    client.close();  // zero linger (the default): RST
    auto [first, second] = reader.join().value();
    CHECK(first.value() == 1);
    REQUIRE_FALSE(second);
    CHECK(second.error() == std::errc::connection_reset);
    std::array<char, 8> buf;
    CHECK(server.read(buf).error() == errc::closed);
  });
}

TEST_CASE("read_pooled echoes, takes buffered bytes first, and ends with an empty buffer",
          "[net][stream]") {
  spindle::test::on_workers([] {
    auto [client, server] = spindle::test::connected_pair();
    auto echo = spindle::spawn([&server]() -> std::size_t {
      std::size_t total = 0;
      for (;;) {
        auto got = server.read_pooled();
        REQUIRE(got.has_value());
        if (got->empty()) break;
        REQUIRE(server.write_all(got->view()).has_value());
        total += got->size();
      }
      REQUIRE(server.shutdown(net::Shutdown::kWrite).has_value());
      return total;
    });
    const std::size_t sent = spindle::test::round_trips(client, 200);
    // Bytes the stream's buffer already holds come before any receive.
    REQUIRE(client.write_all("0123456789").has_value());
    while (client.peek().size() < 10) REQUIRE(client.fill().value() > 0);
    std::array<char, 4> head;
    CHECK(client.read(head).value() == 4);
    auto rest = client.read_pooled();
    REQUIRE(rest.has_value());
    CHECK(rest->view() == "456789");
    CHECK_FALSE(rest->from_pool());
    REQUIRE(client.shutdown(net::Shutdown::kWrite).has_value());
    CHECK(echo.join().value() == sent + 10);
    auto end = client.read_pooled();
    REQUIRE(end.has_value());
    CHECK(end->empty());
  });
}

TEST_CASE("read_pooled times out and poisons the read half", "[net][stream]") {
  spindle::test::on_workers([] {
    auto [client, server] = spindle::test::connected_pair();
    auto r = server.read_pooled(20ms);
    REQUIRE_FALSE(r);
    CHECK(r.error() == errc::timed_out);
    CHECK(server.read_pooled().error() == errc::closed);
  });
}

TEST_CASE("a read times out and cancels its RECV and poisons the read half", "[net][stream]") {
  spindle::test::on_workers([] {
    auto [client, server] = spindle::test::connected_pair();
    std::array<char, 8> buf{};
    const auto t0 = spindle::Clock::now();
    auto r = server.read(buf, 30ms);
    REQUIRE_FALSE(r);
    CHECK(r.error() == errc::timed_out);
    CHECK(spindle::Clock::now() - t0 >= 30ms);
    CHECK(server.read(buf).error() == errc::closed);
    // The cancelled RECV took nothing: what the client sends now is still in
    // the socket (checked through the raw fd).
    REQUIRE(client.write_all("late").has_value());
    std::array<char, 8> raw{};
    auto got = spindle::spawn_blocking(
        [fd = server.native_handle(), &raw] { return ::recv(fd, raw.data(), raw.size(), 0); });
    CHECK(got.join().value() == 4);
    CHECK(std::string(raw.data(), 4) == "late");
    CHECK(buf == std::array<char, 8>{});
  });
}

TEST_CASE("the Config read/write timeout applies by default", "[net][stream]") {
  spindle::Config c;
  c.read_write_timeout = 40ms;
  spindle::test::on_workers(
      [] {
        auto [client, server] = spindle::test::connected_pair();
        std::array<char, 8> buf;
        const auto t0 = spindle::Clock::now();
        CHECK(server.read_exact(buf).error() == errc::timed_out);
        CHECK(spindle::Clock::now() - t0 >= 40ms);
        // A per-call timeout overrides it; an already expired one fails at once.
        CHECK(client.read(buf, 0ms).error() == errc::timed_out);
      },
      {1, 2}, c);
}

TEST_CASE("a deadline beyond the timing wheel's horizon is honoured", "[net][stream]") {
  // With 5 ms ticks and 20 ms network timeouts the timing wheel has 8 slots
  // (a 35 ms horizon); a 400 ms read must not time out at the horizon.
  spindle::Config c;
  c.connect_timeout = 20ms;
  c.read_write_timeout = 20ms;
  spindle::test::on_workers(
      [] {
        auto [client, server] = spindle::test::connected_pair();
        std::array<char, 8> buf;
        const auto t0 = spindle::Clock::now();
        CHECK(server.read(buf, 400ms).error() == errc::timed_out);
        CHECK(spindle::Clock::now() - t0 >= 400ms);
      },
      {1}, c);
}

TEST_CASE("abort of a fiber blocked in read cancels the RECV and awaits its CQE",
          "[net][stream][abort]") {
  spindle::test::on_workers([] {
    auto [client, server] = spindle::test::connected_pair();
    std::array<char, 8> buf{};
    auto reader = spindle::spawn([&] { return server.read(buf); });
    (void)tf::sleep_for(spindle::test::kSettle);
    reader.abort();
    CHECK(reader.join().error() == errc::aborted);
    CHECK(buf == std::array<char, 8>{});
    CHECK(server.read(buf).error() == errc::closed);  // poisoned
    // Nothing was consumed by the cancelled RECV.
    REQUIRE(client.write_all("zz").has_value());
    std::array<char, 8> raw{};
    auto got = spindle::spawn_blocking(
        [fd = server.native_handle(), &raw] { return ::recv(fd, raw.data(), raw.size(), 0); });
    CHECK(got.join().value() == 2);
  });
}

TEST_CASE("writev sends every buffer in order across batches and partial sends", "[net][stream]") {
  spindle::test::on_workers([] {
    auto [client, server] = spindle::test::connected_pair();
    // 200 buffers (more than one SENDMSG batch), some empty, ~2 MiB in all
    // (more than a socket buffer, so sends are partial).
    std::vector<std::string> parts;
    std::string expected;
    for (int i = 0; i < 200; ++i) {
      parts.push_back(i % 17 == 0 ? std::string()
                                  : std::string(10'000 + i, static_cast<char>('a' + i % 26)));
      expected += parts.back();
    }
    std::vector<iovec> iov;
    for (auto& p : parts) iov.push_back({p.data(), p.size()});
    auto writer = spindle::spawn([&] { return client.writev(iov); });
    std::string got(expected.size(), '\0');
    REQUIRE(server.read_exact(got).has_value());
    REQUIRE(writer.join().value().has_value());
    CHECK(got == expected);
    CHECK(client.writev({}).has_value());
  });
}

TEST_CASE("one fiber reads while another writes on the same stream", "[net][stream]") {
  spindle::test::on_workers([] {
    auto [client, server] = spindle::test::connected_pair();
    constexpr std::size_t kBytes = 4 * 1024 * 1024;  // both directions block on full buffers
    auto pump = [](net::TcpStream& s) {
      auto writer = spindle::spawn([&s] {
        const std::string chunk(64 * 1024, 'w');
        for (std::size_t sent = 0; sent < kBytes; sent += chunk.size()) s.write_all(chunk).value();
      });
      std::vector<char> buf(kBytes);
      s.read_exact(buf).value();
      writer.join().value();
      return std::count(buf.begin(), buf.end(), 'w') == static_cast<std::ptrdiff_t>(kBytes);
    };
    auto a = spindle::spawn([&] { return pump(client); });
    auto b = spindle::spawn([&] { return pump(server); });
    CHECK(a.join().value());
    CHECK(b.join().value());
  });
}

TEST_CASE("a write to a reset peer fails and poisons the write half", "[net][stream]") {
  spindle::test::on_workers([] {
    auto [client, server] = spindle::test::connected_pair();
    server.close();  // RST
    (void)tf::sleep_for(spindle::test::kSettle);
    const std::string chunk(64 * 1024, 'x');
    std::error_code err;
    for (int i = 0; i < 100 && !err; ++i) {
      if (auto r = client.write_all(chunk); !r) err = r.error();
    }
    REQUIRE(err);
    CHECK((err == std::errc::connection_reset || err == std::errc::broken_pipe));
    CHECK(client.write_all("x").error() == errc::closed);
  });
}

TEST_CASE("a write blocked on a full socket times out and poisons the write half",
          "[net][stream]") {
  spindle::test::on_workers([] {
    auto [client, server] = spindle::test::connected_pair();
    const std::string big(16 * 1024 * 1024, 'y');  // far more than both socket buffers
    auto r = client.write_all(big, 50ms);
    REQUIRE_FALSE(r);
    CHECK(r.error() == errc::timed_out);
    CHECK(client.write_all("x").error() == errc::closed);
    std::array<char, 8> buf;
    CHECK(server.read(buf).value() > 0);  // the read half of the peer is fine
  });
}

namespace {

// A call under a timeout of `limit` that cannot finish in time: it failed
// with errc::timed_out once `limit` had passed, and not much later.
void check_timed_out(const spindle::Result<void>& r, spindle::Clock::duration waited,
                     spindle::Clock::duration limit) {
  REQUIRE_FALSE(r);
  CHECK(r.error() == errc::timed_out);
  CHECK(waited >= limit);
  CHECK(waited < 1s);
}

}  // namespace

TEST_CASE("one timeout covers every receive of a read_exact", "[net][stream]") {
  spindle::test::on_workers([] {
    auto [client, server] = spindle::test::connected_pair();
    // A byte every 40 ms: each receive waits less than the timeout, the
    // whole read would take 240 ms.
    auto trickle = spindle::spawn([&client] {
      for (int i = 0; i < 6; ++i) {
        (void)tf::sleep_for(40ms);
        if (!client.write_all("x")) return;
      }
    });
    std::array<char, 6> buf;
    const auto t0 = spindle::Clock::now();
    auto r = server.read_exact(buf, 100ms);
    check_timed_out(r, spindle::Clock::now() - t0, 100ms);
    CHECK(trickle.join().has_value());
  });
}

TEST_CASE("one timeout covers every partial send of a write_all", "[net][stream]") {
  spindle::test::on_workers([] {
    auto [client, server] = spindle::test::connected_pair();
    // The reader takes up to 256 KiB every 10 ms: each send waits less than
    // the timeout, the whole write would take seconds.
    std::atomic<bool> done{false};
    auto reader = spindle::spawn([&server, &done] {
      std::vector<char> buf(256 * 1024);
      while (!done.load()) {
        (void)tf::sleep_for(10ms);
        if (!server.read(buf, 1s)) return;
      }
    });
    const std::string big(64 * 1024 * 1024, 'y');
    const auto t0 = spindle::Clock::now();
    auto r = client.write_all(big, 150ms);
    check_timed_out(r, spindle::Clock::now() - t0, 150ms);
    done.store(true);
    CHECK(reader.join().has_value());
  });
}

TEST_CASE("addresses and options and closed streams", "[net][stream]") {
  spindle::test::on_workers([] {
    auto [client, server] = spindle::test::connected_pair();
    CHECK(client.peer_addr().value() == server.local_addr().value());
    CHECK(server.peer_addr().value() == client.local_addr().value());
    CHECK(client.peer_addr().value().ip_string() == "127.0.0.1");
    int v = 0;
    socklen_t len = sizeof v;
    REQUIRE(::getsockopt(server.native_handle(), IPPROTO_TCP, TCP_NODELAY, &v, &len) == 0);
    CHECK(v != 0);  // Config::tcp_nodelay
    linger l{};
    len = sizeof l;
    REQUIRE(::getsockopt(client.native_handle(), SOL_SOCKET, SO_LINGER, &l, &len) == 0);
    CHECK((l.l_onoff == 1 && l.l_linger == 0));  // Config::zero_linger
    REQUIRE(server.set_nodelay(false).has_value());
    len = sizeof v;
    REQUIRE(::getsockopt(server.native_handle(), IPPROTO_TCP, TCP_NODELAY, &v, &len) == 0);
    CHECK(v == 0);

    net::TcpStream moved = std::move(client);
    CHECK_FALSE(client.is_open());
    CHECK(moved.is_open());
    std::array<char, 4> buf;
    CHECK(client.read(buf).error() == errc::closed);
    CHECK(client.write_all("x").error() == errc::closed);
    CHECK(client.shutdown(net::Shutdown::kBoth).error() == errc::closed);
    CHECK(client.local_addr().error() == errc::closed);
    net::TcpStream never;
    CHECK(never.read_exact(buf).error() == errc::closed);
  });
}

TEST_CASE("Config turns nodelay and zero linger off", "[net][stream]") {
  spindle::Config c;
  c.tcp_nodelay = false;
  c.zero_linger = false;
  spindle::test::on_workers(
      [] {
        auto [client, server] = spindle::test::connected_pair();
        int v = 1;
        socklen_t len = sizeof v;
        REQUIRE(::getsockopt(server.native_handle(), IPPROTO_TCP, TCP_NODELAY, &v, &len) == 0);
        CHECK(v == 0);
        linger l{};
        len = sizeof l;
        REQUIRE(::getsockopt(client.native_handle(), SOL_SOCKET, SO_LINGER, &l, &len) == 0);
        CHECK(l.l_onoff == 0);
      },
      {1}, c);
}

TEST_CASE("a small read buffer still serves reads of every size", "[net][stream]") {
  spindle::Config c;
  c.read_buffer_size = 3;
  spindle::test::on_workers(
      [] {
        auto [client, server] = spindle::test::connected_pair();
        REQUIRE(client.write_all("hello, world").has_value());
        std::array<char, 2> a;
        REQUIRE(server.read_exact(a).has_value());
        std::array<char, 10> b;
        REQUIRE(server.read_exact(b).has_value());
        CHECK(std::string(a.data(), 2) + std::string(b.data(), 10) == "hello, world");
        REQUIRE(client.write_all("abcd").has_value());
        std::size_t filled = server.fill().value();
        while (filled < 3) filled += server.fill().value();
        CHECK(server.peek().size() == 3);
        CHECK(server.fill().error() == std::errc::no_buffer_space);  // full, not poisoned
        server.consume(3);
        CHECK(server.fill().value() == 1);
        CHECK(spindle::test::text(server.peek()) == "d");
      },
      {1}, c);
}

TEST_CASE("IPv6 loopback", "[net][stream][ipv6]") {
  spindle::test::require_ipv6_loopback(SOCK_STREAM);
  spindle::test::on_workers([] {
    auto [client, server] = spindle::test::connected_pair(net::SocketAddress::loopback_v6());
    CHECK(client.peer_addr().value().is_v6());
    CHECK(server.peer_addr().value().ip_string() == "::1");
    REQUIRE(client.write_all("over v6").has_value());
    std::array<char, 7> buf;
    REQUIRE(server.read_exact(buf).has_value());
    CHECK(std::string(buf.data(), 7) == "over v6");
  });
}
