// spindle-kv against hostile clients: a command trickled byte by byte
// (slowloris) is cut off by --command-timeout, a silent connection by
// --idle-timeout, and a client that pipelines without reading its replies
// stalls on TCP back-pressure instead of growing the server's memory.
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "../process.hpp"
#include "kv_server.hpp"
#include "proc_stats.hpp"

using kvtest::Client;
using kvtest::resp;
using kvtest::Server;
using kvtest::TempDir;
using spindle::test::rss_kib;
using spindle::test::Trickle;
using spindle::test::trickle;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

TEST_CASE("a command trickled past --command-timeout closes the connection", "[kv][integration]") {
  TempDir tmp;
  Server s(tmp.path() / "data", {"--command-timeout", "1"});

  // Silence between commands is not limited by --command-timeout.
  Client idle(s.port());
  idle.send("PING\r\n");
  REQUIRE(idle.recv_exactly(7) == "+PONG\r\n");
  std::this_thread::sleep_for(1500ms);
  idle.send("PING\r\n");
  CHECK(idle.recv_exactly(7) == "+PONG\r\n");

  // A SET whose 100-byte value comes one byte every 100 ms: 10 s in all.
  Client slow(s.port());
  slow.send("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$100\r\n");
  const Trickle t = trickle(slow.fd(), 'v', 100);
  INFO(t.sent << " value bytes sent in " << std::chrono::duration<double>(t.took).count() << " s");
  REQUIRE(t.closed);
  CHECK(t.sent < 100);
  CHECK(t.took >= 900ms);  // not before the limit (1 s from the first byte)

  // Nothing of the cut-off command was run; the server serves on.
  Client check(s.port());
  check.send(resp({"EXISTS", "k"}));
  CHECK(check.recv_exactly(4) == ":0\r\n");
  idle.send("PING\r\n");
  CHECK(idle.recv_exactly(7) == "+PONG\r\n");
  CHECK(s.stop() == 0);
}

TEST_CASE("a connection silent past --idle-timeout is closed", "[kv][integration]") {
  TempDir tmp;
  Server s(tmp.path() / "data", {"--idle-timeout", "0.5"});
  Client c(s.port());
  c.send("PING\r\n");
  REQUIRE(c.recv_exactly(7) == "+PONG\r\n");
  const auto began = Clock::now();
  CHECK(c.closed_by_peer());  // within the client's 10 s guard
  CHECK(Clock::now() - began >= 400ms);
  CHECK(s.stop() == 0);
}

TEST_CASE("a client that pipelines without reading stalls the server - not its memory",
          "[kv][integration]") {
  TempDir tmp;
  Server s(tmp.path() / "data");
  const std::string value(16 * 1024, 'v');
  const std::string reply = "$" + std::to_string(value.size()) + "\r\n" + value + "\r\n";
  Client c(s.port());
  c.send(resp({"SET", "big", value}));
  REQUIRE(c.recv_exactly(5) == "+OK\r\n");
  const long rss_before = rss_kib(s.pid());
  REQUIRE(rss_before > 0);

  // GETs until the kernel takes no more for half a second: the server has
  // stopped reading because its replies are not being read. Capped so that
  // a server that kept reading could not make this loop run for ever.
  const std::string get = "GET big\r\n";
  const int sndbuf = 16 * 1024;  // a small client-side queue: fewer replies to read back
  REQUIRE(::setsockopt(c.fd(), SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf) == 0);
  std::string batch;
  for (int i = 0; i < 1024; ++i) batch += get;
  constexpr std::size_t kCap = 16 << 20;  // bytes of requests
  std::size_t sent = 0;                   // bytes of GETs the kernel took
  auto stalled_since = Clock::now();
  while (sent < kCap) {
    const std::size_t at = sent % batch.size();
    const ssize_t n =
        ::send(c.fd(), batch.data() + at, batch.size() - at, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
      stalled_since = Clock::now();
      continue;
    }
    REQUIRE((errno == EAGAIN || errno == EWOULDBLOCK));
    if (Clock::now() - stalled_since > 500ms) break;
    std::this_thread::sleep_for(10ms);
  }
  const std::size_t gets = sent / get.size();  // whole ones; the server waits for the rest
  const long rss_stalled = rss_kib(s.pid());
  const double replies_mib = static_cast<double>(gets) * reply.size() / (1 << 20);
  INFO(gets << " GETs sent (" << replies_mib << " MiB of replies); server RSS " << rss_before
            << " KiB before, " << rss_stalled << " KiB stalled");
  REQUIRE(sent < kCap);         // the server pushed back
  REQUIRE(replies_mib >= 256);  // what the server would hold if it buffered them all
  CHECK(rss_stalled - rss_before < 64 * 1024);

  // Reading now gets every reply, in full and in order.
  std::size_t got = 0;
  while (got < gets) {
    const std::size_t n = std::min<std::size_t>(64, gets - got);
    const std::string chunk = c.recv_exactly(n * reply.size());
    REQUIRE(chunk.size() == n * reply.size());
    for (std::size_t i = 0; i < n; ++i)
      REQUIRE(chunk.compare(i * reply.size(), reply.size(), reply) == 0);
    got += n;
  }
  CHECK(got == gets);
  // The GET cut in two by the last send: its rest completes it.
  if (const std::size_t part = sent % get.size(); part > 0) {
    c.send(get.substr(part));
    CHECK(c.recv_exactly(reply.size()) == reply);
  }
  c.send("PING\r\n");
  CHECK(c.recv_exactly(7) == "+PONG\r\n");
  CHECK(s.stop() == 0);
}
