#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "net_test_support.hpp"

using namespace std::chrono_literals;
using spindle::errc;
namespace net = spindle::net;

namespace {

int int_option(int fd, int level, int name) {
  int v = -1;
  socklen_t len = sizeof v;
  REQUIRE(::getsockopt(fd, level, name, &v, &len) == 0);
  return v;
}

// SO_KEEPALIVE is on with these timings.
void check_keepalive(int fd, int idle, int interval, int count) {
  CHECK(int_option(fd, SOL_SOCKET, SO_KEEPALIVE) == 1);
  CHECK(int_option(fd, IPPROTO_TCP, TCP_KEEPIDLE) == idle);
  CHECK(int_option(fd, IPPROTO_TCP, TCP_KEEPINTVL) == interval);
  CHECK(int_option(fd, IPPROTO_TCP, TCP_KEEPCNT) == count);
}

}  // namespace

TEST_CASE("SO_REUSEPORT: two listeners bound to one port both accept", "[net][options]") {
  spindle::test::on_workers([] {
    auto first = net::TcpListener::bind(net::SocketAddress::loopback_v4(), {.reuse_port = true});
    REQUIRE(first.has_value());
    const auto addr = first->local_addr().value();
    auto second = net::TcpListener::bind(addr, {.reuse_port = true});
    REQUIRE(second.has_value());
    CHECK(net::TcpListener::bind(addr).error() == std::errc::address_in_use);
    CHECK(int_option(second->native_handle(), SOL_SOCKET, SO_REUSEPORT) == 1);

    // The kernel spreads connections over both by a hash of their addresses:
    // with 64 of them, each listener gets some (all on one: odds of 2^-63).
    constexpr int kConnections = 64;
    std::atomic<int> accepted{0};
    // Returns the connections it accepted: closing them (a reset, with zero
    // linger) could fail a connect still waiting to hear it succeeded.
    auto acceptor = [&accepted](net::TcpListener& l) {
      std::vector<net::TcpStream> held;
      while (accepted.load() < kConnections) {
        auto s = l.accept(20ms);
        if (!s) {
          REQUIRE(s.error() == errc::timed_out);
          continue;
        }
        held.push_back(std::move(*s));
        ++accepted;
      }
      return held;
    };
    auto a = spindle::spawn([&] { return acceptor(*first); });
    auto b = spindle::spawn([&] { return acceptor(*second); });
    std::vector<net::TcpStream> clients;
    for (int i = 0; i < kConnections; ++i) clients.push_back(net::TcpStream::connect(addr).value());
    const std::size_t on_first = a.join().value().size();
    const std::size_t on_second = b.join().value().size();
    CHECK(on_first + on_second == kConnections);
    CHECK(on_first > 0);
    CHECK(on_second > 0);
  });
}

TEST_CASE("SO_REUSEPORT and SO_REUSEADDR on UDP sockets", "[net][options][udp]") {
  auto a = net::UdpSocket::bind(net::SocketAddress::loopback_v4(), {.reuse_port = true}).value();
  const auto addr = a.local_addr().value();
  CHECK(net::UdpSocket::bind(addr).error() == std::errc::address_in_use);
  auto b = net::UdpSocket::bind(addr, {.reuse_port = true});
  REQUIRE(b.has_value());
  CHECK(b->local_addr().value() == addr);
  auto c = net::UdpSocket::bind(net::SocketAddress::loopback_v4(), {.reuse_address = true});
  REQUIRE(c.has_value());
  CHECK(int_option(c->native_handle(), SOL_SOCKET, SO_REUSEADDR) == 1);
}

TEST_CASE("keepalive and buffer sizes on listeners, accepted and connected streams",
          "[net][options]") {
  spindle::test::on_workers([] {
    const net::Keepalive listen_keepalive{.idle = 30s, .interval = 5s, .count = 4};
    auto listener = net::TcpListener::bind(net::SocketAddress::loopback_v4(),
                                           {.buffers = {.send = 16384, .receive = 16384},
                                            .keepalive = listen_keepalive})
                        .value();
    CHECK(int_option(listener.native_handle(), SOL_SOCKET, SO_REUSEADDR) == 1);  // as before
    auto accepting = spindle::spawn([&] { return listener.accept(5s); });
    auto client = net::TcpStream::connect(
                      listener.local_addr().value(),
                      {.buffers = {.send = 32768, .receive = 32768},
                       .keepalive = net::Keepalive{.idle = 60s, .interval = 10s, .count = 3}})
                      .value();
    auto server = accepting.join().value().value();
    // Linux doubles a buffer size for its bookkeeping; accepted connections
    // inherit the listener's settings.
    check_keepalive(server.native_handle(), 30, 5, 4);
    CHECK(int_option(server.native_handle(), SOL_SOCKET, SO_RCVBUF) == 2 * 16384);
    CHECK(int_option(server.native_handle(), SOL_SOCKET, SO_SNDBUF) == 2 * 16384);
    check_keepalive(client.native_handle(), 60, 10, 3);
    const net::BufferSizes sizes = client.buffer_sizes().value();
    CHECK(sizes.send == 2 * 32768);
    CHECK(sizes.receive == 2 * 32768);

    // At run time.
    REQUIRE(client.set_keepalive(std::nullopt).has_value());
    CHECK(int_option(client.native_handle(), SOL_SOCKET, SO_KEEPALIVE) == 0);
    REQUIRE(client.set_keepalive(net::Keepalive{}).has_value());
    check_keepalive(client.native_handle(), 15, 15, 9);
    REQUIRE(client.set_buffer_sizes({.receive = 8192}).has_value());
    CHECK(client.buffer_sizes().value().receive == 2 * 8192);
    CHECK(client.buffer_sizes().value().send == 2 * 32768);  // a zero field is left alone
    // TCP_NODELAY and zero linger from Config, as before.
    CHECK(int_option(client.native_handle(), IPPROTO_TCP, TCP_NODELAY) == 1);
    linger l{};
    socklen_t len = sizeof l;
    REQUIRE(::getsockopt(server.native_handle(), SOL_SOCKET, SO_LINGER, &l, &len) == 0);
    CHECK((l.l_onoff == 1 && l.l_linger == 0));
    net::TcpStream closed;
    CHECK(closed.set_keepalive(std::nullopt).error() == errc::closed);
    CHECK(closed.buffer_sizes().error() == errc::closed);
  });
}

TEST_CASE("bind-before-connect: the peer sees the chosen local address and port",
          "[net][options]") {
  spindle::test::on_workers([] {
    auto listener = net::TcpListener::bind(net::SocketAddress::loopback_v4()).value();
    const auto addr = listener.local_addr().value();
    // A free port on another loopback address: bound once, then let go (no
    // connection used it, so nothing lingers in TIME_WAIT).
    net::SocketAddress local = net::SocketAddress::parse("127.0.0.2:0").value();
    local.set_port(net::TcpListener::bind(local).value().local_addr().value().port());
    auto accepting = spindle::spawn([&] { return listener.accept(5s); });
    auto client = net::TcpStream::connect(addr, {.local = local}).value();
    auto server = accepting.join().value().value();
    CHECK(client.local_addr().value() == local);
    CHECK(server.peer_addr().value() == local);

    // Port 0: the kernel chooses the port, the address is ours.
    accepting = spindle::spawn([&] { return listener.accept(5s); });
    auto any_port =
        net::TcpStream::connect(addr, {.local = net::SocketAddress::parse_ip("127.0.0.3").value()})
            .value();
    auto second = accepting.join().value().value();
    CHECK(second.peer_addr().value().ip_string() == "127.0.0.3");
    CHECK(second.peer_addr().value().port() != 0);
    CHECK(second.peer_addr().value() == any_port.local_addr().value());

    // An address this machine does not have (TEST-NET-1).
    CHECK(net::TcpStream::connect(addr, {.local = net::SocketAddress::parse("192.0.2.1:0").value()})
              .error() == std::errc::address_not_available);
  });
}

TEST_CASE("option values out of range are refused with the option's name", "[net][options]") {
  const auto lo = net::SocketAddress::loopback_v4();
  auto refused = [&](net::Keepalive k) { return net::TcpListener::bind(lo, {.keepalive = k}); };
  CHECK_THROWS_AS(refused({.idle = 0s}), std::invalid_argument);
  CHECK_THROWS_WITH(refused({.idle = 0s}), Catch::Contains("Keepalive::idle"));
  CHECK_THROWS_WITH(refused({.interval = 40000s}), Catch::Contains("Keepalive::interval"));
  CHECK_THROWS_WITH(refused({.count = 128}), Catch::Contains("Keepalive::count"));
  CHECK_THROWS_WITH(refused({.count = 0}), Catch::Contains("1 .. 127"));
  CHECK_THROWS_WITH(net::UdpSocket::bind(lo, {.buffers = {.send = net::BufferSizes::kMax + 1}}),
                    Catch::Contains("BufferSizes::send"));
  CHECK_THROWS_WITH(net::UnixDatagram::bind(net::SocketAddress::unix_unnamed(),
                                            {.buffers = {.receive = net::BufferSizes::kMax + 1}}),
                    Catch::Contains("BufferSizes::receive"));
  spindle::test::on_workers(
      [lo] {
        CHECK_THROWS_WITH(net::TcpStream::connect(lo, {.keepalive = net::Keepalive{.count = -1}}),
                          Catch::Contains("Keepalive::count"));
        auto [client, server] = spindle::test::connected_pair();
        CHECK_THROWS_WITH(client.set_keepalive(net::Keepalive{.idle = -5s}),
                          Catch::Contains("Keepalive::idle"));
        CHECK_THROWS_WITH(client.set_buffer_sizes({.send = net::BufferSizes::kMax + 1}),
                          Catch::Contains("BufferSizes::send"));
      },
      {1});
}
