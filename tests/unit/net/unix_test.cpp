#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <string>

#include "net_test_support.hpp"
#include "skip.hpp"
#include "temp_dir.hpp"

using namespace std::chrono_literals;
using spindle::errc;
namespace net = spindle::net;

namespace {

// An abstract name no other test or process uses.
net::SocketAddress fresh_abstract() {
  static std::atomic<int> next{0};
  return net::SocketAddress::unix_abstract("spindle-test-" + std::to_string(::getpid()) + "-" +
                                           std::to_string(next++))
      .value();
}

// A socket path in `dir` no other run uses; skips the test if the directory
// is too deep for sun_path.
net::SocketAddress fresh_path(spindle::test::TempDir& dir) {
  auto a = net::SocketAddress::unix_path(dir.fresh().string());
  if (!a)
    SPINDLE_SKIP("the temporary directory is too long for a Unix socket path: %s",
                 a.error().c_str());
  return *a;
}

// Accepts one connection on `listener` and echoes it until end of stream;
// returns the byte count.
spindle::JoinHandle<std::size_t> echo_one(net::UnixListener& listener) {
  return spindle::spawn([&listener] {
    auto s = listener.accept(5s);
    REQUIRE(s.has_value());
    CHECK(s->peer_addr().value().is_unix_unnamed());
    return spindle::test::echo_until_end(*s);
  });
}

}  // namespace

TEST_CASE("Unix stream echo over a filesystem path and an abstract name", "[net][unix]") {
  spindle::test::TempDir dir;
  (void)fresh_path(dir);  // skips, outside the runtime, if paths do not fit
  spindle::test::on_workers([&dir] {
    for (const net::SocketAddress& addr : {fresh_path(dir), fresh_abstract()}) {
      INFO(addr.to_string());
      auto listener = net::UnixListener::bind(addr).value();
      CHECK(listener.local_addr().value() == addr);
      auto server = echo_one(listener);
      auto client = net::UnixStream::connect(addr).value();
      CHECK(client.peer_addr().value() == addr);
      const std::size_t sent = spindle::test::round_trips(client, 100);
      REQUIRE(client.shutdown(net::Shutdown::kWrite).has_value());
      CHECK(server.join().value() == sent);
      std::array<char, 4> rest;
      CHECK(client.read(rest).value() == 0);
      if (addr.is_unix_path()) CHECK(std::filesystem::is_socket(std::string(addr.unix_name())));
    }
  });
}

TEST_CASE("a pair of Unix streams, and connects that find nothing", "[net][unix]") {
  spindle::test::TempDir dir;
  (void)fresh_path(dir);
  spindle::test::on_workers([&dir] {
    auto [a, b] = net::UnixStream::pair().value();
    REQUIRE(a.write_all("over the pair").has_value());
    std::array<char, 13> buf;
    REQUIRE(b.read_exact(buf).has_value());
    CHECK(std::string(buf.data(), buf.size()) == "over the pair");
    CHECK(a.local_addr().value().is_unix_unnamed());
    CHECK(net::UnixStream::connect(fresh_path(dir)).error() ==
          std::errc::no_such_file_or_directory);
    CHECK(net::UnixStream::connect(fresh_abstract()).error() == std::errc::connection_refused);
    CHECK(net::UnixStream::connect(net::SocketAddress::loopback_v4(1)).error() ==
          std::errc::address_family_not_supported);
  });
}

TEST_CASE("a Unix listener removes a stale socket file only when asked", "[net][unix]") {
  spindle::test::TempDir dir;
  const net::SocketAddress addr = fresh_path(dir);
  const std::string path(addr.unix_name());
  {
    auto gone = net::UnixListener::bind(addr).value();
  }
  REQUIRE(std::filesystem::is_socket(path));  // the file outlives its listener
  CHECK(net::UnixListener::bind(addr).error() == std::errc::address_in_use);
  spindle::test::on_workers(
      [&] {
        auto listener = net::UnixListener::bind(addr, {.remove_stale_socket = true}).value();
        // A listener in use is never taken over: its file stays, it still accepts.
        CHECK(net::UnixListener::bind(addr, {.remove_stale_socket = true}).error() ==
              std::errc::address_in_use);
        CHECK(net::UnixDatagram::bind(addr, {.remove_stale_socket = true}).error() ==
              std::errc::address_in_use);
        auto server = echo_one(listener);
        auto client = net::UnixStream::connect(addr).value();
        REQUIRE(client.write_all("live").has_value());
        REQUIRE(client.shutdown(net::Shutdown::kWrite).has_value());
        CHECK(server.join().value() == 4);
      },
      {1});
  // A file that is not a socket is never removed.
  std::filesystem::remove(path);
  std::ofstream(path) << "data";
  CHECK(net::UnixListener::bind(addr, {.remove_stale_socket = true}).error() ==
        std::errc::address_in_use);
  CHECK(std::filesystem::is_regular_file(path));
}

TEST_CASE("Unix datagram echo between bound sockets, a pair and an unbound sender", "[net][unix]") {
  spindle::test::TempDir dir;
  (void)fresh_path(dir);
  spindle::test::on_workers([&dir] {
    const net::SocketAddress server_addr = fresh_path(dir);
    auto server = net::UnixDatagram::bind(server_addr).value();
    auto echoing = spindle::spawn([&server] { spindle::test::echo_datagrams(server, 20); });
    const net::SocketAddress client_addr = fresh_abstract();
    auto client = net::UnixDatagram::bind(client_addr).value();
    spindle::test::datagram_round_trips(client, server_addr, 20);
    REQUIRE(echoing.join());

    // Connected: send and recv.
    REQUIRE(client.connect(server_addr).has_value());
    CHECK(client.peer_addr().value() == server_addr);
    REQUIRE(client.send("to the peer").has_value());
    std::array<char, 64> buf;
    auto got = server.recv(buf, 5s);
    REQUIRE(got.has_value());
    CHECK(got->from == client_addr);

    auto [a, b] = net::UnixDatagram::pair().value();
    REQUIRE(a.send("paired").value() == 6);
    auto paired = b.recv(buf, 5s);
    REQUIRE(paired.has_value());
    CHECK(std::string(buf.data(), paired->size) == "paired");

    // An unbound sender's datagrams come from an unnamed address; binding
    // to the unnamed address autobinds to an abstract name.
    auto anonymous = net::UnixDatagram::unbound().value();
    REQUIRE(anonymous.send_to("anon", server_addr).value() == 4);
    auto anon = server.recv_from(buf, 5s);
    REQUIRE(anon.has_value());
    CHECK(anon->from.is_unix_unnamed());
    auto autobound = net::UnixDatagram::bind(net::SocketAddress::unix_unnamed()).value();
    CHECK(autobound.local_addr().value().is_unix_abstract());
    std::filesystem::remove(std::string(server_addr.unix_name()));
  });
}
