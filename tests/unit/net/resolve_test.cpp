#include <netdb.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "net_test_support.hpp"

namespace net = spindle::net;

// Only literals and "localhost" (from /etc/hosts): a test must not send DNS
// queries off this machine.
TEST_CASE("resolve returns literals without a lookup", "[net][resolve]") {
  spindle::test::on_workers(
      [] {
        auto v4 = net::resolve("127.0.0.1", 80).value();
        REQUIRE(v4.size() == 1);
        CHECK(v4[0] == net::SocketAddress::loopback_v4(80));
        auto v6 = net::resolve("[::1]", 443).value();
        REQUIRE(v6.size() == 1);
        CHECK(v6[0] == net::SocketAddress::loopback_v6(443));
      },
      {1, 2});
}

TEST_CASE("resolve looks localhost up on the blocking pool", "[net][resolve]") {
  spindle::test::on_workers(
      [] {
        auto r = net::resolve("localhost", 8080);
        REQUIRE(r.has_value());
        REQUIRE_FALSE(r->empty());
        CHECK(std::all_of(r->begin(), r->end(), [](const net::SocketAddress& a) {
          return a.port() == 8080 && (a == net::SocketAddress::loopback_v4(8080) ||
                                      a == net::SocketAddress::loopback_v6(8080));
        }));
      },
      {1, 2});
}

TEST_CASE("resolve errors carry getaddrinfo's message", "[net][resolve]") {
  const std::error_code e(EAI_NONAME, net::resolve_category());
  CHECK(std::string(e.category().name()) == "getaddrinfo");
  CHECK_FALSE(e.message().empty());
}

TEST_CASE("a deadline scope cuts short a resolve waiting for the blocking pool",
          "[net][resolve][deadline_scope]") {
  // One pool thread, held by a blocking call until the resolve has given up:
  // the lookup cannot start, so only the scope can end the resolve.
  spindle::Config config;
  config.blocking_threads = 1;
  spindle::test::on_workers(
      [] {
        std::atomic<bool> release{false};
        std::atomic<bool> holding{false};
        auto holder = spindle::spawn_blocking([&] {
          holding = true;
          while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        });
        REQUIRE(spindle::test::eventually([&] { return holding.load(); }));
        const auto start = spindle::Clock::now();
        auto r = spindle::this_fiber::with_timeout(std::chrono::milliseconds(20),
                                                   [] { return net::resolve("localhost", 80); });
        CHECK(spindle::Clock::now() - start >= std::chrono::milliseconds(20));
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error() == spindle::errc::timed_out);
        release = true;
        holder.join().value();
        // The pool is free again: the same lookup succeeds.
        CHECK(net::resolve("localhost", 80).has_value());
      },
      {1, 2}, config);
}
