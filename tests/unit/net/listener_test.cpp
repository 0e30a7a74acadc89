#include <sys/socket.h>

#include <array>
#include <string>
#include <vector>

#include "net_test_support.hpp"
#include "skip.hpp"

using namespace std::chrono_literals;
using spindle::errc;
namespace net = spindle::net;
namespace tf = spindle::this_fiber;

TEST_CASE("bind reports a taken port and a foreign address", "[net][listener]") {
  // bind needs no fiber.
  auto first = net::TcpListener::bind(net::SocketAddress::loopback_v4()).value();
  const auto taken = first.local_addr().value();
  CHECK(taken.port() != 0);
  auto second = net::TcpListener::bind(taken);
  REQUIRE_FALSE(second);
  CHECK(second.error() == std::errc::address_in_use);
  // 192.0.2.1 (TEST-NET-1) is never configured locally; bind sends nothing.
  auto foreign = net::TcpListener::bind(net::SocketAddress::parse("192.0.2.1:0").value());
  REQUIRE_FALSE(foreign);
  CHECK(foreign.error() == std::errc::address_not_available);
  net::TcpListener moved = std::move(first);
  CHECK_FALSE(first.is_open());
  CHECK(moved.local_addr().value() == taken);
  CHECK(first.local_addr().error() == errc::closed);
}

TEST_CASE("accept times out and the listener stays usable", "[net][listener]") {
  spindle::test::on_workers([] {
    auto listener = net::TcpListener::bind(net::SocketAddress::loopback_v4()).value();
    const auto t0 = spindle::Clock::now();
    CHECK(listener.accept(20ms).error() == errc::timed_out);
    CHECK(spindle::Clock::now() - t0 >= 20ms);
    auto client = spindle::spawn(
        [addr = listener.local_addr().value()] { return net::TcpStream::connect(addr); });
    auto server = listener.accept(5s);
    REQUIRE(server.has_value());
    REQUIRE(client.join().value().has_value());
    net::TcpListener closed;
    CHECK(closed.accept().error() == errc::closed);
  });
}

TEST_CASE("abort of a fiber blocked in accept cancels the ACCEPT and awaits its CQE",
          "[net][listener][abort]") {
  spindle::test::on_workers([] {
    auto listener = net::TcpListener::bind(net::SocketAddress::loopback_v4()).value();
    auto acceptor = spindle::spawn([&] { return listener.accept(); });
    (void)tf::sleep_for(spindle::test::kSettle);
    acceptor.abort();
    CHECK(acceptor.join().error() == errc::aborted);
    // The cancelled accept took no connection: the next one is still queued
    // for the next accept().
    auto client = net::TcpStream::connect(listener.local_addr().value()).value();
    auto server = listener.accept(5s);
    REQUIRE(server.has_value());
    REQUIRE(client.write_all("ok").has_value());
    std::array<char, 2> buf;
    REQUIRE(server->read_exact(buf).has_value());
    CHECK(std::string(buf.data(), 2) == "ok");
  });
}

TEST_CASE("connect to a closed port is refused", "[net][listener]") {
  spindle::test::on_workers([] {
    net::SocketAddress addr;
    {
      auto l = net::TcpListener::bind(net::SocketAddress::loopback_v4()).value();
      addr = l.local_addr().value();
    }
    auto r = net::TcpStream::connect(addr);
    REQUIRE_FALSE(r);
    CHECK(r.error() == std::errc::connection_refused);
  });
}

TEST_CASE("connect times out against a listener whose backlog is full", "[net][listener]") {
  spindle::test::on_workers(
      [] {
        // Backlog 0: the kernel queues one connection and then drops SYNs,
        // so a connect hangs in SYN_SENT like one to a blackholed address.
        auto listener =
            net::TcpListener::bind(net::SocketAddress::loopback_v4(), {.backlog = 0}).value();
        const auto addr = listener.local_addr().value();
        std::vector<net::TcpStream> queued;
        bool timed_out = false;
        for (int i = 0; i < 8 && !timed_out; ++i) {
          const auto t0 = spindle::Clock::now();
          auto r = net::TcpStream::connect(addr, 100ms);
          if (r) {
            queued.push_back(std::move(*r));
            continue;
          }
          REQUIRE(r.error() == errc::timed_out);
          CHECK(spindle::Clock::now() - t0 >= 100ms);
          timed_out = true;
        }
        if (!timed_out) SPINDLE_SKIP("a full listen backlog did not stall connect() here");
        CHECK(queued.size() >= 1);
      },
      {1, 2});
}

TEST_CASE("the Config connect timeout applies by default", "[net][listener]") {
  spindle::Config c;
  c.connect_timeout = 60ms;
  spindle::test::on_workers(
      [] {
        auto listener =
            net::TcpListener::bind(net::SocketAddress::loopback_v4(), {.backlog = 0}).value();
        const auto addr = listener.local_addr().value();
        std::vector<net::TcpStream> queued;
        for (int i = 0; i < 8; ++i) {
          const auto t0 = spindle::Clock::now();
          auto r = net::TcpStream::connect(addr);
          if (r) {
            queued.push_back(std::move(*r));
            continue;
          }
          CHECK(r.error() == errc::timed_out);
          CHECK(spindle::Clock::now() - t0 >= 60ms);
          CHECK(spindle::Clock::now() - t0 < 5s);
          return;
        }
        SPINDLE_SKIP("a full listen backlog did not stall connect() here");
      },
      {1}, c);
}

TEST_CASE("10000 sequential connections leak no file descriptors", "[net][listener]") {
  spindle::test::on_workers([] {
    constexpr int kConnections = 10'000;
    auto listener = net::TcpListener::bind(net::SocketAddress::loopback_v4()).value();
    const auto addr = listener.local_addr().value();
    const std::size_t fds_before = spindle::test::open_fd_count();
    auto server = spindle::spawn([&] {
      int served = 0;
      for (int i = 0; i < kConnections; ++i) {
        auto s = listener.accept(10s);
        if (!s) return served;
        std::array<char, 1> b;
        if (!s->read_exact(b) || !s->write_all(std::string_view(b.data(), 1))) return served;
        ++served;
      }
      return served;
    });
    int ok = 0;
    for (int i = 0; i < kConnections; ++i) {
      auto c = net::TcpStream::connect(addr);
      if (!c) break;
      const char byte = static_cast<char>(i);
      std::array<char, 1> back{};
      if (!c->write_all(std::string_view(&byte, 1)) || !c->read_exact(back) || back[0] != byte)
        break;
      ++ok;
    }
    CHECK(ok == kConnections);
    CHECK(server.join().value() == kConnections);
    CHECK(spindle::test::open_fd_count() == fds_before);
  });
}
