// The apps where io_uring is refused, as in a default Docker or containerd
// container: each runs under spindle-no-io-uring (a seccomp filter that makes
// io_uring_setup fail with EPERM). With the default backend choice (auto)
// each says so once and serves on epoll, raw sockets and real clients alike
// (curl, wrk, redis-benchmark), and spindle-kv keeps every acknowledged write
// across a SIGKILL; with io_uring forced (SPINDLE_IO_BACKEND=io_uring) each
// stops at once with one message that says what is missing and how to allow
// it. A missing client program makes its test skip.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <charconv>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "process.hpp"
#include "skip.hpp"

namespace {

using spindle::test::Client;
using spindle::test::count_of;
using spindle::test::Ms;
using spindle::test::run_program;
using spindle::test::Server;

const std::string kNoIoUring = SPINDLE_NO_IO_URING_BIN;
// Runs an app under the filter with the default backend choice (auto).
const std::vector<std::string> kAuto{kNoIoUring, "/usr/bin/env", "-u", "SPINDLE_IO_BACKEND"};

// Skips (with the helper's message) where seccomp filters are unavailable.
void require_seccomp() {
  const auto probe = spindle::test::run_program({kNoIoUring, "/bin/true"}, Ms(10'000));
  REQUIRE(probe.code.has_value());
  if (*probe.code == 125) SPINDLE_SKIP("%s", probe.err.c_str());
  REQUIRE(*probe.code == 0);
}

void check_refused(const std::vector<std::string>& app) {
  std::vector<std::string> argv{kNoIoUring, "/usr/bin/env", "SPINDLE_IO_BACKEND=io_uring"};
  argv.insert(argv.end(), app.begin(), app.end());
  const auto run = spindle::test::run_program(argv, Ms(10'000));
  INFO(run.err);
  REQUIRE(run.code.has_value());
  CHECK(*run.code != 0);
  CHECK_THAT(run.err, Catch::Contains("io_uring is unavailable (io_uring_setup: Operation not "
                                      "permitted)"));
  CHECK_THAT(run.err, Catch::Contains("kernel.io_uring_disabled"));
  CHECK_THAT(run.err, Catch::Contains("seccomp"));
}

// A scratch directory for spindle-kv, removed afterwards.
struct KvDir {
  std::filesystem::path path = std::filesystem::temp_directory_path() /
                               ("spindle-no-io-uring-kv-" + std::to_string(::getpid()));
  ~KvDir() { std::filesystem::remove_all(path); }
};

void need(const char* program) {
  if (!spindle::test::have_program(program)) SPINDLE_SKIP("%s is not installed", program);
}

// The server fell back from io_uring: it said why on stderr and named epoll
// as its backend in its "listening on" line.
void check_on_epoll(Server& server) {
  CHECK_THAT(server.process().out(), Catch::Contains("workers, epoll, "));
  CHECK_THAT(server.process().err(), Catch::Contains("using the epoll backend"));
}

// N of wrk's "N requests in T, B read" line; 0 if there is none.
long wrk_requests(const std::string& out) {
  const auto at = out.find(" requests in ");
  if (at == std::string::npos || at == 0) return 0;
  const auto from = out.find_last_not_of("0123456789", at - 1);
  const auto begin = from == std::string::npos ? 0 : from + 1;
  long n = 0;
  std::from_chars(out.data() + begin, out.data() + at, n);
  return n;
}

std::string resp(const std::vector<std::string>& args) {
  std::string s = "*" + std::to_string(args.size()) + "\r\n";
  for (const auto& a : args) s += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return s;
}

}  // namespace

TEST_CASE("where io_uring_setup is refused, forcing io_uring stops each app saying how to allow it",
          "[integration][backend]") {
  require_seccomp();
  SECTION("spindle-echo") { check_refused({SPINDLE_ECHO_BIN, "--listen", "127.0.0.1:0"}); }
  SECTION("spindle-http") { check_refused({SPINDLE_HTTP_BIN, "--listen", "127.0.0.1:0"}); }
  SECTION("spindle-kv") {
    KvDir dir;  // in case the app got as far as opening its log
    check_refused({SPINDLE_KV_BIN, "--listen", "127.0.0.1:0", "--dir", dir.path.string()});
  }
}

TEST_CASE("where io_uring_setup is refused, each app falls back to epoll and serves",
          "[integration][backend]") {
  require_seccomp();
  SECTION("spindle-echo") {
    Server server(SPINDLE_ECHO_BIN, {}, kAuto);
    Client c(server.port());
    REQUIRE(c.send_all("hello, epoll\n"));
    CHECK(c.recv_n(13) == "hello, epoll\n");
    CHECK(server.stop() == 0);
    check_on_epoll(server);
  }
  SECTION("spindle-http") {
    Server server(SPINDLE_HTTP_BIN, {}, kAuto);
    Client c(server.port());
    REQUIRE(c.send_all("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
    CHECK_THAT(c.recv_all(), Catch::StartsWith("HTTP/1.1 200"));
    CHECK(server.stop() == 0);
    check_on_epoll(server);
  }
  SECTION("spindle-kv") {
    KvDir dir;
    {
      Server server(SPINDLE_KV_BIN, {"--dir", dir.path.string()}, kAuto);
      Client c(server.port());
      REQUIRE(c.send_all("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\n"));
      CHECK(c.recv_n(5) == "+OK\r\n");
      CHECK(server.stop() == 0);
      check_on_epoll(server);
    }
    // The record is on disk: a second server (on epoll too) reads it back.
    Server server(SPINDLE_KV_BIN, {"--dir", dir.path.string()}, kAuto);
    Client c(server.port());
    REQUIRE(c.send_all("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"));
    CHECK(c.recv_n(11) == "$5\r\nvalue\r\n");
    CHECK(server.stop() == 0);
    check_on_epoll(server);
  }
}

TEST_CASE(
    "where io_uring_setup is refused, spindle-http on epoll answers curl on one kept-alive "
    "connection",
    "[integration][backend]") {
  require_seccomp();
  need("curl");
  Server server(SPINDLE_HTTP_BIN, {}, kAuto);
  const auto r = run_program(
      {"curl", "-sv", "--http1.1", "--max-time", "10", server.url("/"), server.url("/?q=1")},
      Ms(20'000));
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.out == "Hello, World!Hello, World!");
  CHECK(count_of(r.err, "< HTTP/1.1 200 OK") == 2);
  CHECK(count_of(r.err, "Re-using existing connection") == 1);  // one connection for both
  CHECK(server.stop() == 0);
  check_on_epoll(server);
}

TEST_CASE(
    "where io_uring_setup is refused, spindle-http on epoll serves wrk -t1 -c50 -d2s with "
    "no socket errors",
    "[integration][backend]") {
  require_seccomp();
  need("wrk");
  Server server(SPINDLE_HTTP_BIN, {}, kAuto);
  const auto r = run_program({"wrk", "-t1", "-c50", "-d2s", server.url("/")}, Ms(30'000));
  INFO(r.out << r.err);
  REQUIRE(r.code == 0);
  CHECK(wrk_requests(r.out) > 0);
  CHECK(r.out.find("Socket errors") == std::string::npos);
  CHECK(r.out.find("Non-2xx") == std::string::npos);
  CHECK(server.stop() == 0);
  check_on_epoll(server);
}

TEST_CASE(
    "where io_uring_setup is refused, spindle-kv on epoll serves redis-benchmark -t set+get "
    "without errors",
    "[integration][backend]") {
  require_seccomp();
  need("redis-benchmark");
  KvDir dir;
  Server server(SPINDLE_KV_BIN, {"--dir", dir.path.string(), "--fsync", "always"}, kAuto);
  const auto r = run_program({"redis-benchmark", "-p", std::to_string(server.port()), "-t",
                              "set,get", "-n", "10000", "-q"},
                             Ms(45'000));
  std::string out = r.out + r.err;
  for (char& c : out) {
    if (c == '\r') c = '\n';  // the progress lines
  }
  INFO(out);
  CHECK(r.code == 0);
  CHECK_THAT(out, Catch::Contains("SET: "));
  CHECK_THAT(out, Catch::Contains("GET: "));
  CHECK_THAT(out, Catch::Contains("requests per second"));
  CHECK_THAT(out, !Catch::Contains("rror"));  // "Error", "error"
  CHECK_THAT(out, !Catch::Contains("ERR"));
  Client c(server.port());
  REQUIRE(c.send_all(resp({"DBSIZE"})));
  CHECK(c.recv_n(4) == ":1\r\n");  // key:__rand_int__ without -r
  CHECK(server.stop() == 0);
  check_on_epoll(server);
}

TEST_CASE(
    "where io_uring_setup is refused, spindle-kv on epoll keeps every acknowledged write "
    "across a SIGKILL",
    "[integration][backend]") {
  require_seccomp();
  // With always a reply follows the sync of its record; with everysec and no,
  // its write to the file, which a SIGKILL of the server does not undo.
  for (const char* fsync : {"always", "everysec", "no"}) {
    INFO("--fsync " << fsync);
    KvDir dir;
    const std::vector<std::string> flags{"--dir", dir.path.string(), "--fsync", fsync};
    // Per key its acknowledged value, or nullopt once deleted.
    std::vector<std::pair<std::string, std::optional<std::string>>> want;
    {
      Server server(SPINDLE_KV_BIN, flags, kAuto);
      // Four connections each pipeline writes to 250 keys (a SET each, a
      // second SET on every third, a DEL on every fifth), every batch sent
      // before any reply is read, so that commits can cover several clients.
      constexpr int kClients = 4, kKeys = 250;
      std::vector<std::unique_ptr<Client>> clients;
      std::vector<std::string> replies(kClients);
      for (int c = 0; c < kClients; ++c) {
        clients.push_back(std::make_unique<Client>(server.port()));
        std::string batch;
        for (int i = 0; i < kKeys; ++i) {
          const std::string key = "k" + std::to_string(c) + "-" + std::to_string(i);
          std::optional<std::string> value = "v" + std::to_string(i) + std::string(i % 7, 'x');
          batch += resp({"SET", key, *value});
          replies[c] += "+OK\r\n";
          if (i % 3 == 0) {
            value = "again" + std::to_string(i);
            batch += resp({"SET", key, *value});
            replies[c] += "+OK\r\n";
          }
          if (i % 5 == 0) {
            value.reset();
            batch += resp({"DEL", key});
            replies[c] += ":1\r\n";
          }
          want.emplace_back(key, value);
        }
        REQUIRE(clients.back()->send_all(batch));
      }
      for (int c = 0; c < kClients; ++c)
        REQUIRE(clients[c]->recv_n(replies[c].size()) == replies[c]);
      CHECK_FALSE(server.stop(SIGKILL).has_value());  // killed, not stopped cleanly
      check_on_epoll(server);
    }
    Server server(SPINDLE_KV_BIN, flags, kAuto);
    std::size_t live = 0;
    std::string gets, expected;
    for (const auto& [key, value] : want) {
      gets += resp({"GET", key});
      expected +=
          value ? "$" + std::to_string(value->size()) + "\r\n" + *value + "\r\n" : "$-1\r\n";
      live += value.has_value();
    }
    CHECK_THAT(server.process().out(), Catch::Contains(", " + std::to_string(live) + " keys, "));
    Client c(server.port());
    REQUIRE(c.send_all(gets));
    CHECK(c.recv_n(expected.size()) == expected);
    const std::string size = ":" + std::to_string(live) + "\r\n";
    REQUIRE(c.send_all(resp({"DBSIZE"})));
    CHECK(c.recv_n(size.size()) == size);
    CHECK(server.stop() == 0);
    check_on_epoll(server);
  }
}
