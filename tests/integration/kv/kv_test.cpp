// spindle-kv with real clients: redis-cli commands and pipelines,
// redis-benchmark, restarts (clean and SIGKILL), torn-tail truncation,
// --compact, and bad protocol input.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "kv_server.hpp"
#include "many_connections.hpp"
#include "spindle/storage/crc32c.hpp"

using kvtest::cli;
using kvtest::Client;
using kvtest::resp;
using kvtest::Server;
using kvtest::TempDir;

namespace {

// The first generation of the log: <dir>/kv/hex("log.1").
std::filesystem::path first_log(const std::filesystem::path& dir) {
  return dir / "kv" / "6c6f672e31";
}

// Just past the log's last record. With --fsync always the file runs on in
// zeros, so a crash's leftovers land there, not at the file's end. Assumes
// that the last record ends in a byte that is not zero.
std::uintmax_t records_end(const std::filesystem::path& log) {
  const std::string bytes = kvtest::slurp(log);
  const auto last = bytes.find_last_not_of('\0');
  return last == std::string::npos ? 0 : last + 1;
}

void overwrite(const std::filesystem::path& file, std::uintmax_t offset, std::string_view bytes) {
  std::fstream f(file, std::ios::binary | std::ios::in | std::ios::out);
  f.seekp(static_cast<std::streamoff>(offset));
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(f.good());
}

}  // namespace

TEST_CASE("redis-cli: the commands", "[kv][integration]") {
  kvtest::require_redis_cli();
  TempDir tmp;
  Server s(tmp.path() / "data");
  CHECK(cli(s, {"PING"}) == "PONG");
  CHECK(cli(s, {"ping", "hello"}) == "hello");
  CHECK(cli(s, {"ECHO", "two words"}) == "two words");
  CHECK(cli(s, {"GET", "missing"}) == "");
  CHECK(cli(s, {"SET", "k", "v"}) == "OK");
  CHECK(cli(s, {"GET", "k"}) == "v");
  CHECK(cli(s, {"SET", "k", "new", "NX"}) == "");
  CHECK(cli(s, {"GET", "k"}) == "v");
  CHECK(cli(s, {"SET", "other", "x", "XX"}) == "");
  CHECK(cli(s, {"EXISTS", "other"}) == "0");
  CHECK(cli(s, {"SET", "k", "w", "XX"}) == "OK");
  CHECK(cli(s, {"SET", "other", "x", "NX"}) == "OK");
  CHECK(cli(s, {"EXISTS", "k", "other", "k", "none"}) == "3");
  CHECK(cli(s, {"SET", "k", "v", "NX", "XX"}) == "ERR syntax error");
  CHECK(cli(s, {"SET", "k", "v", "EX", "0"}) == "ERR invalid expire time in 'set' command");
  CHECK(cli(s, {"SET", "k", "v", "EX", "abc"}) == "ERR value is not an integer or out of range");

  CHECK(cli(s, {"INCR", "n"}) == "1");
  CHECK(cli(s, {"INCRBY", "n", "41"}) == "42");
  CHECK(cli(s, {"DECR", "n"}) == "41");
  CHECK(cli(s, {"DECRBY", "n", "50"}) == "-9");
  CHECK(cli(s, {"INCR", "k"}) == "ERR value is not an integer or out of range");
  CHECK(cli(s, {"SET", "big", "9223372036854775807"}) == "OK");
  CHECK(cli(s, {"INCR", "big"}) == "ERR increment or decrement would overflow");

  CHECK(cli(s, {"MSET", "a", "1", "b", "2", "c", "3"}) == "OK");
  CHECK(cli(s, {"MGET", "a", "nope", "c"}) == "1\n\n3");
  CHECK(cli(s, {"MSET", "a"}) == "ERR wrong number of arguments for 'mset' command");
  CHECK(cli(s, {"DEL", "a", "b", "nope"}) == "2");
  CHECK(cli(s, {"GET", "a"}) == "");

  CHECK(cli(s, {"TTL", "c"}) == "-1");
  CHECK(cli(s, {"TTL", "nope"}) == "-2");
  CHECK(cli(s, {"EXPIRE", "c", "100"}) == "1");
  CHECK(cli(s, {"TTL", "c"}) == "100");
  CHECK(cli(s, {"EXPIRE", "nope", "100"}) == "0");
  CHECK(cli(s, {"SET", "short", "x", "PX", "150"}) == "OK");
  CHECK(cli(s, {"GET", "short"}) == "x");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(cli(s, {"GET", "short"}) == "");
  CHECK(cli(s, {"EXPIRE", "c", "-1"}) == "1");  // a past time deletes
  CHECK(cli(s, {"EXISTS", "c"}) == "0");

  CHECK(cli(s, {"DBSIZE"}) == "4");  // k other n big
  const std::string keys = cli(s, {"KEYS", "*"});
  for (const char* k : {"k", "other", "n", "big"}) CHECK(keys.find(k) != std::string::npos);
  CHECK(cli(s, {"KEYS", "o?h[a-f]r"}) == "other");
  CHECK(cli(s, {"KEYS", "zzz*"}) == "");
  CHECK(cli(s, {"COMMAND", "COUNT"}) != "0");
  CHECK(cli(s, {"SELECT", "0"}) == "OK");
  CHECK(cli(s, {"NOSUCH", "x"}).find("ERR unknown command 'NOSUCH'") == 0);
  CHECK(cli(s, {"GET"}) == "ERR wrong number of arguments for 'get' command");
  CHECK(cli(s, {"FLUSHALL"}) == "OK");
  CHECK(cli(s, {"DBSIZE"}) == "0");
  // Binary-safe values.
  CHECK(cli(s, {"SET", "bin", std::string("a\tb c")}) == "OK");
  CHECK(cli(s, {"GET", "bin"}) == "a\tb c");
}

TEST_CASE("pipelines: many commands in one write RESP and inline in order", "[kv][integration]") {
  TempDir tmp;
  Server s(tmp.path() / "data");
  Client c(s.port());
  std::string batch, want;
  for (int i = 0; i < 2000; ++i) {
    const std::string k = "key" + std::to_string(i), v = "value" + std::to_string(i);
    batch += resp({"SET", k, v});
    want += "+OK\r\n";
  }
  for (int i = 0; i < 2000; ++i) {
    const std::string k = "key" + std::to_string(i), v = "value" + std::to_string(i);
    if (i % 2) {
      batch += resp({"GET", k});
    } else {
      batch += "GET " + k + "\r\n";  // inline
    }
    want += "$" + std::to_string(v.size()) + "\r\n" + v + "\r\n";
  }
  batch +=
      "PING\r\n\r\n*0\r\nECHO \"quoted \\x41\\n\"\r\n";  // an empty line and *0 are no commands
  want += "+PONG\r\n$9\r\nquoted A\n\r\n";
  // Sent in awkward pieces: replies must not depend on how bytes arrive.
  for (std::size_t at = 0; at < batch.size(); at += 1013)
    c.send(std::string_view(batch).substr(at, 1013));
  CHECK(c.recv_exactly(want.size()) == want);

  // A value larger than any read buffer, in one command.
  const std::string big(3 << 20, 'x');
  c.send(resp({"SET", "big", big}) + resp({"GET", "big"}));
  const std::string big_reply = "+OK\r\n$" + std::to_string(big.size()) + "\r\n" + big + "\r\n";
  CHECK(c.recv_exactly(big_reply.size()) == big_reply);
}

TEST_CASE("redis-cli --pipe mass insertion", "[kv][integration]") {
  kvtest::require_redis_cli();
  TempDir tmp;
  Server s(tmp.path() / "data");
  std::string input;
  for (int i = 0; i < 10000; ++i)
    input += resp({"SET", "m" + std::to_string(i), std::to_string(i)});
  const auto file = tmp.path() / "input.resp";
  {
    std::ofstream f(file, std::ios::binary);
    f << input;
  }
  const std::string out = kvtest::shell("redis-cli -p " + std::to_string(s.port()) + " --pipe < " +
                                        file.string() + " 2>&1");
  INFO(out);
  CHECK(out.find("errors: 0, replies: 10000") != std::string::npos);
  CHECK(cli(s, {"DBSIZE"}) == "10000");
  CHECK(cli(s, {"GET", "m9999"}) == "9999");
}

TEST_CASE("redis-benchmark -t set+get -n 100000 -q completes without errors",
          "[kv][integration][benchmark]") {
  if (!kvtest::have_program("redis-benchmark"))
    SPINDLE_SKIP("redis-benchmark is not installed (Debian: redis-tools)");
  TempDir tmp;
  {
    Server s(tmp.path() / "data");  // --fsync always: a group commit before every reply
    int status = 0;
    std::string out = kvtest::shell(
        "redis-benchmark -p " + std::to_string(s.port()) + " -t set,get -n 100000 -q 2>&1",
        &status);
    for (char& c : out) {
      if (c == '\r') c = '\n';
    }
    INFO(out);
    CHECK(status == 0);
    CHECK(out.find("SET: ") != std::string::npos);
    CHECK(out.find("GET: ") != std::string::npos);
    CHECK(out.find("requests per second") != std::string::npos);
    CHECK(out.find("rror") == std::string::npos);  // "Error", "error"
    CHECK(out.find("ERR") == std::string::npos);
    CHECK(cli(s, {"DBSIZE"}) == "1");  // key:__rand_int__ without -r
  }
}

TEST_CASE("a restart keeps the data after a clean stop and after SIGKILL", "[kv][integration]") {
  kvtest::require_redis_cli();
  TempDir tmp;
  const auto dir = tmp.path() / "data";
  for (const char* fsync : {"always", "everysec", "no"}) {
    INFO("--fsync " << fsync);
    {
      Server s(dir, {"--fsync", fsync});
      CHECK(cli(s, {"SET", std::string("clean-") + fsync, "1"}) == "OK");
      CHECK(cli(s, {"SET", "ttl", "x", "EX", "1000"}) == "OK");
      CHECK(cli(s, {"INCR", "counter"}) != "");
      const int st = s.stop();
      CHECK((WIFEXITED(st) && WEXITSTATUS(st) == 0));
    }
    {
      Server s(dir, {"--fsync", fsync});
      CHECK(cli(s, {"GET", std::string("clean-") + fsync}) == "1");
      const int ttl = std::stoi(cli(s, {"TTL", "ttl"}));
      CHECK((ttl > 900 && ttl <= 1000));
      // Acknowledged writes survive a SIGKILL of the server: they are in the
      // log (synced with always; written to the kernel with everysec and no).
      CHECK(cli(s, {"MSET", "k1", "v1", "k2", "v2"}) == "OK");
      CHECK(cli(s, {"DEL", std::string("clean-") + fsync}) == "1");
      s.kill(SIGKILL);
    }
    Server s(dir, {"--fsync", fsync});
    CHECK(cli(s, {"MGET", "k1", "k2"}) == "v1\nv2");
    CHECK(cli(s, {"EXISTS", std::string("clean-") + fsync}) == "0");
  }
  Server s(dir);
  CHECK(cli(s, {"GET", "counter"}) == "3");
}

TEST_CASE("a torn tail is cut off with a warning - the rest is kept", "[kv][integration]") {
  kvtest::require_redis_cli();
  TempDir tmp;
  const auto dir = tmp.path() / "data";
  {
    Server s(dir);
    for (int i = 0; i < 100; ++i) REQUIRE(cli(s, {"SET", "k" + std::to_string(i), "v"}) == "OK");
    s.stop();
  }
  // A crash in the middle of a write: half a record after the last one.
  const auto log = first_log(dir);
  REQUIRE(std::filesystem::exists(log));
  const auto end = records_end(log);
  overwrite(log, end,
            std::string("\x20\x00\x00\x00\x12\x34\x56\x78Sxx", 11));  // claims 32 bytes, has 3
  {
    Server s(dir);
    CHECK(cli(s, {"DBSIZE"}) == "100");
    CHECK(s.log().find("torn tail") != std::string::npos);
    CHECK(std::filesystem::file_size(log) == end);  // the zeros after it go too
    CHECK(cli(s, {"SET", "after", "1"}) == "OK");
    s.stop();
  }
  // Garbage that is long enough but fails its checksum is cut off as well.
  overwrite(log, records_end(log),
            std::string("\x04\x00\x00\x00\xde\xad\xbe\xef"
                        "Dxyz",
                        12));
  Server s(dir);
  CHECK(cli(s, {"DBSIZE"}) == "101");
  CHECK(cli(s, {"GET", "after"}) == "1");
}

TEST_CASE("with --fsync always the log runs ahead in zeros, kept as free space on restart",
          "[kv][integration]") {
  kvtest::require_redis_cli();
  TempDir tmp;
  const auto dir = tmp.path() / "data";
  {
    Server s(dir);
    for (int i = 0; i < 10; ++i) REQUIRE(cli(s, {"SET", "k" + std::to_string(i), "v"}) == "OK");
    s.stop();
  }
  const auto log = first_log(dir);
  const auto end = records_end(log);
  const auto size = std::filesystem::file_size(log);
  CHECK(size - end > (1u << 20) / 2);  // most of 1 MiB
  {
    Server s(dir);
    CHECK(cli(s, {"DBSIZE"}) == "10");
    CHECK(s.log().find("torn tail") == std::string::npos);
    CHECK(std::filesystem::file_size(log) == size);
    CHECK(cli(s, {"SET", "after", "1"}) == "OK");
    s.kill(SIGKILL);
  }
  {
    Server s(dir);
    CHECK(cli(s, {"DBSIZE"}) == "11");
    CHECK(cli(s, {"GET", "after"}) == "1");
    CHECK(s.log().find("torn tail") == std::string::npos);
  }
  // Without syncs there is nothing to gain: the file ends at the last record.
  const auto other = tmp.path() / "other";
  {
    Server s(other, {"--fsync", "no"});
    REQUIRE(cli(s, {"SET", "k", "v"}) == "OK");
    s.stop();
  }
  CHECK(std::filesystem::file_size(first_log(other)) == records_end(first_log(other)));
}

TEST_CASE("compaction rewrites the log as one record per live key", "[kv][integration]") {
  kvtest::require_redis_cli();
  TempDir tmp;
  const auto dir = tmp.path() / "data";
  {
    Server s(dir);
    Client c(s.port());
    std::string batch;
    for (int i = 0; i < 5000; ++i) batch += resp({"SET", "hot", std::string(100, 'a' + i % 26)});
    batch += resp({"SET", "cold", "1"}) + resp({"SET", "gone", "1"}) + resp({"DEL", "gone"});
    c.send(batch);
    CHECK(c.recv_exactly(5 * 5002 + 4).size() == 5 * 5002 + 4);
    s.stop();
  }
  const auto old_log = first_log(dir);
  const auto before = records_end(old_log);
  Server s(dir, {"--compact"});
  CHECK(s.log().find("compacted") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(old_log));
  const auto new_log = dir / "kv" / "6c6f672e32";  // log.2
  REQUIRE(std::filesystem::exists(new_log));
  CHECK(std::filesystem::file_size(new_log) < before / 100);
  CHECK(cli(s, {"GET", "hot"}) == std::string(100, 'a' + 4999 % 26));
  CHECK(cli(s, {"GET", "cold"}) == "1");
  CHECK(cli(s, {"EXISTS", "gone"}) == "0");
  CHECK(cli(s, {"DBSIZE"}) == "2");
}

TEST_CASE("bad protocol input gets a RESP error and the connection closes", "[kv][integration]") {
  TempDir tmp;
  Server s(tmp.path() / "data", {"--max-bulk-len", "16", "--max-array-len", "4"});
  struct Case {
    const char* what;
    std::string input;
    std::string error;
  };
  const std::vector<Case> cases = {
      {"bad array length", "*abc\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
      {"array too long", "*5\r\n", "-ERR Protocol error: invalid multibulk length\r\n"},
      {"not a bulk", "*1\r\n:3\r\n", "-ERR Protocol error: expected '$', got ':'\r\n"},
      {"bad bulk length", "*1\r\n$x\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
      {"negative bulk length", "*1\r\n$-1\r\n", "-ERR Protocol error: invalid bulk length\r\n"},
      {"bulk too long", "*2\r\n$3\r\nSET\r\n$17\r\n",
       "-ERR Protocol error: invalid bulk length\r\n"},
      {"unbalanced quotes", "SET \"a b\r\n",
       "-ERR Protocol error: unbalanced quotes in request\r\n"},
      {"count line too long", "*" + std::string(70000, '1'),
       "-ERR Protocol error: too big mbulk count string\r\n"},
      {"inline too long", std::string(70000, 'a'),
       "-ERR Protocol error: too big inline request\r\n"},
  };
  for (const auto& c : cases) {
    INFO(c.what);
    Client client(s.port());
    client.send("PING\r\n" + c.input);  // a good command first: its reply comes too
    CHECK(client.recv_all() == "+PONG\r\n" + c.error);
  }
  // The server is still fine.
  Client ok(s.port());
  ok.send(resp({"SET", "k", std::string(16, 'v')}));
  CHECK(ok.recv_exactly(5) == "+OK\r\n");
  ok.send("QUIT\r\n");
  CHECK(ok.recv_all() == "+OK\r\n");
}

TEST_CASE("an intact record that makes no sense stops the start and is kept", "[kv][integration]") {
  kvtest::require_redis_cli();
  TempDir tmp;
  const auto dir = tmp.path() / "data";
  {
    Server s(dir);
    REQUIRE(cli(s, {"SET", "k", "v"}) == "OK");
    s.stop();
  }
  // A record whose checksum holds but whose kind is unknown: not a torn
  // tail, so cutting it (and what follows) could lose acknowledged data.
  const auto log = first_log(dir);
  const std::string payload = "Qxyz";
  const std::uint32_t crc = spindle::storage::crc32c(payload);
  std::string record("\x04\x00\x00\x00", 4);
  for (int i = 0; i < 4; ++i) record += static_cast<char>(crc >> (8 * i));
  record += payload;
  overwrite(log, records_end(log), record);
  const auto size = std::filesystem::file_size(log);
  int status = 0;
  const std::string out =
      kvtest::shell(std::string(SPINDLE_KV_BIN) + " --listen 127.0.0.1:0 --dir " +
                        kvtest::quote(dir.string()) + " 2>&1",
                    &status);
  INFO(out);
  CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 1));
  CHECK(out.find("is corrupt") != std::string::npos);
  CHECK(std::filesystem::file_size(log) == size);
}

TEST_CASE("beyond --max-connections a connection is closed and SIGUSR1 dumps the fibers",
          "[kv][integration]") {
  TempDir tmp;
  Server s(tmp.path() / "data", {"--max-connections", "1"});
  Client first(s.port());
  first.send("PING\r\n");
  REQUIRE(first.recv_exactly(7) == "+PONG\r\n");
  {
    Client second(s.port());  // accepted and closed at once
    CHECK(second.recv_all().empty());
  }
  ::kill(s.pid(), SIGUSR1);
  first.send("PING\r\n");  // still served, after the dump
  CHECK(first.recv_exactly(7) == "+PONG\r\n");
  first.send("QUIT\r\n");
  CHECK(first.recv_all() == "+OK\r\n");
  CHECK(s.stop() == 0);
  const std::string log = s.log();
  INFO(log);
  CHECK_THAT(log, Catch::Contains("refused 1 connection: 1 open"));
  CHECK_THAT(log, Catch::Contains("'kv-acceptor': parked (io accept)"));
}

TEST_CASE("an out-of-range --commit-window stops the start with a message naming it",
          "[kv][integration]") {
  int status = 0;
  const std::string out = kvtest::shell(
      std::string(SPINDLE_KV_BIN) + " --dir /nonexistent --commit-window 2000000 2>&1", &status);
  INFO(out);
  CHECK(status != 0);
  CHECK(out.find("--commit-window") != std::string::npos);
}

TEST_CASE("15,000 concurrent connections are each answered as they open and again",
          "[kv][integration][scale]") {
  using spindle::test::kManyConnections;
  spindle::test::require_fds_for_connections(kManyConnections);
  TempDir tmp;
  Server s(tmp.path() / "data");
  const auto r = spindle::test::open_many(
      s.port(), kManyConnections, [](spindle::test::Client& c, std::size_t) {
        return c.send_all("*1\r\n$4\r\nPING\r\n") && c.recv_n(7) == "+PONG\r\n";
      });
  spindle::test::check_many_connections(r, kManyConnections);
  CHECK(s.stop() == 0);
  INFO(s.log());
  CHECK_THAT(s.log(), !Catch::Contains("refused"));
}
