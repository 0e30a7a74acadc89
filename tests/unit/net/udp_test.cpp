#include <sys/socket.h>

#include <array>
#include <string>

#include "net_test_support.hpp"

using namespace std::chrono_literals;
using spindle::errc;
namespace net = spindle::net;
namespace tf = spindle::this_fiber;

TEST_CASE("UDP echo between two sockets", "[net][udp]") {
  spindle::test::on_workers([] {
    auto server = net::UdpSocket::bind(net::SocketAddress::loopback_v4()).value();
    const auto server_addr = server.local_addr().value();
    CHECK(server_addr.port() != 0);
    auto client = net::UdpSocket::bind(net::SocketAddress::loopback_v4()).value();
    auto echoing = spindle::spawn([&server] { spindle::test::echo_datagrams(server, 100); });
    spindle::test::datagram_round_trips(client, server_addr, 100);
    REQUIRE(echoing.join());
  });
}

TEST_CASE("a lost datagram: recv_from times out and the socket stays usable", "[net][udp]") {
  spindle::test::on_workers([] {
    auto s = net::UdpSocket::bind(net::SocketAddress::loopback_v4()).value();
    std::array<char, 16> buf{};
    const auto t0 = spindle::Clock::now();
    auto r = s.recv_from(buf, 30ms);  // nothing was sent
    REQUIRE_FALSE(r);
    CHECK(r.error() == errc::timed_out);
    CHECK(spindle::Clock::now() - t0 >= 30ms);
    // Nothing is poisoned: the next datagram is received.
    REQUIRE(s.send_to("again", s.local_addr().value()).has_value());
    auto again = s.recv_from(buf, 5s);
    REQUIRE(again.has_value());
    CHECK(std::string(buf.data(), again->size) == "again");
  });
}

TEST_CASE("the Config read/write timeout applies to a UDP receive by default", "[net][udp]") {
  spindle::Config c;
  c.read_write_timeout = 40ms;
  spindle::test::on_workers(
      [] {
        auto s = net::UdpSocket::bind(net::SocketAddress::loopback_v4()).value();
        std::array<char, 16> buf{};
        const auto t0 = spindle::Clock::now();
        CHECK(s.recv(buf).error() == errc::timed_out);
        CHECK(spindle::Clock::now() - t0 >= 40ms);
      },
      {1}, c);
}

TEST_CASE("a datagram longer than the buffer is reported truncated, and an empty one arrives",
          "[net][udp]") {
  spindle::test::on_workers([] {
    auto a = net::UdpSocket::bind(net::SocketAddress::loopback_v4()).value();
    auto b = net::UdpSocket::bind(net::SocketAddress::loopback_v4()).value();
    const auto b_addr = b.local_addr().value();
    REQUIRE(a.send_to("0123456789", b_addr).value() == 10);
    REQUIRE(a.send_to(std::string_view(), b_addr).value() == 0);
    std::array<char, 4> small{};
    auto got = b.recv_from(small, 5s);
    REQUIRE(got.has_value());
    CHECK(got->truncated);
    CHECK(got->size == 4);
    CHECK(std::string(small.data(), 4) == "0123");
    auto empty = b.recv_from(small, 5s);
    REQUIRE(empty.has_value());
    CHECK(empty->size == 0);
    CHECK_FALSE(empty->truncated);
    CHECK(empty->from == a.local_addr().value());
  });
}

TEST_CASE("connected UDP sockets send and receive only with their peer", "[net][udp]") {
  spindle::test::on_workers([] {
    auto a = net::UdpSocket::bind(net::SocketAddress::loopback_v4()).value();
    auto b = net::UdpSocket::bind(net::SocketAddress::loopback_v4()).value();
    const auto a_addr = a.local_addr().value();
    const auto b_addr = b.local_addr().value();
    CHECK(a.peer_addr().error() == std::errc::not_connected);
    CHECK(a.send("nowhere").error() == std::errc::destination_address_required);
    REQUIRE(a.connect(b_addr).has_value());
    REQUIRE(b.connect(a_addr).has_value());
    CHECK(a.peer_addr().value() == b_addr);
    // A stranger's datagram to a connected socket is dropped by the kernel.
    auto stranger = net::UdpSocket::bind(net::SocketAddress::loopback_v4()).value();
    REQUIRE(stranger.send_to("stray", a_addr).has_value());
    REQUIRE(a.send("ping").value() == 4);
    std::array<char, 16> buf{};
    auto ping = b.recv(buf, 5s);
    REQUIRE(ping.has_value());
    CHECK(std::string(buf.data(), ping->size) == "ping");
    CHECK(ping->from == a_addr);
    REQUIRE(b.send("pong").value() == 4);
    auto pong = a.recv(buf, 5s);
    REQUIRE(pong.has_value());
    CHECK(std::string(buf.data(), pong->size) == "pong");
  });
}

TEST_CASE("UDP over IPv6 loopback", "[net][udp][ipv6]") {
  spindle::test::require_ipv6_loopback(SOCK_DGRAM);
  spindle::test::on_workers([] {
    auto server = net::UdpSocket::bind(net::SocketAddress::loopback_v6()).value();
    const auto server_addr = server.local_addr().value();
    CHECK(server_addr.is_v6());
    auto client = net::UdpSocket::bind(net::SocketAddress::loopback_v6()).value();
    auto echoing = spindle::spawn([&server] { spindle::test::echo_datagrams(server, 10); });
    spindle::test::datagram_round_trips(client, server_addr, 10);
    REQUIRE(echoing.join());
  });
}

TEST_CASE("abort of a fiber blocked in recv_from returns aborted and takes no datagram",
          "[net][udp][abort]") {
  spindle::test::on_workers([] {
    auto s = net::UdpSocket::bind(net::SocketAddress::loopback_v4()).value();
    std::array<char, 8> buf{};
    auto reader = spindle::spawn([&] { return s.recv_from(buf, net::Timeout::never()); });
    (void)tf::sleep_for(spindle::test::kSettle);
    reader.abort();
    CHECK(reader.join().error() == errc::aborted);
    CHECK(buf == std::array<char, 8>{});
    REQUIRE(s.send_to("after", s.local_addr().value()).has_value());
    auto got = s.recv_from(buf, 5s);
    REQUIRE(got.has_value());
    CHECK(std::string(buf.data(), got->size) == "after");
  });
}

TEST_CASE("set_broadcast sets SO_BROADCAST, and a closed socket says closed", "[net][udp]") {
  auto s = net::UdpSocket::bind(net::SocketAddress::any_v4()).value();
  int v = 0;
  socklen_t len = sizeof v;
  REQUIRE(::getsockopt(s.native_handle(), SOL_SOCKET, SO_BROADCAST, &v, &len) == 0);
  CHECK(v == 0);
  REQUIRE(s.set_broadcast(true).has_value());
  REQUIRE(::getsockopt(s.native_handle(), SOL_SOCKET, SO_BROADCAST, &v, &len) == 0);
  CHECK(v == 1);
  net::UdpSocket moved = std::move(s);
  CHECK_FALSE(s.is_open());
  CHECK(s.set_broadcast(false).error() == errc::closed);
  CHECK(s.local_addr().error() == errc::closed);
  CHECK(moved.is_open());
  CHECK(net::UdpSocket::bind(net::SocketAddress::unix_abstract("x").value()).error() ==
        std::errc::address_family_not_supported);
}
