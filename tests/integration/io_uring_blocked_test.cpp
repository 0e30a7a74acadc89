// The apps where io_uring is refused, as in a default Docker or containerd
// container: each runs under spindle-no-io-uring (a seccomp filter that makes
// io_uring_setup fail with EPERM). With the default backend choice (auto)
// each says so once and serves on epoll; with io_uring forced
// (SPINDLE_IO_BACKEND=io_uring) each stops at once with one message that says
// what is missing and how to allow it.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "process.hpp"
#include "skip.hpp"

namespace {

using spindle::test::Ms;

const std::string kNoIoUring = SPINDLE_NO_IO_URING_BIN;

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
  const std::vector<std::string> launcher{kNoIoUring, "/usr/bin/env", "-u", "SPINDLE_IO_BACKEND"};
  SECTION("spindle-echo") {
    spindle::test::Server server(SPINDLE_ECHO_BIN, {}, launcher);
    spindle::test::Client c(server.port());
    REQUIRE(c.send_all("hello, epoll\n"));
    CHECK(c.recv_n(13) == "hello, epoll\n");
    CHECK(server.stop() == 0);
    CHECK_THAT(server.process().out(), Catch::Contains("epoll"));
    CHECK_THAT(server.process().err(), Catch::Contains("using the epoll backend"));
  }
  SECTION("spindle-http") {
    spindle::test::Server server(SPINDLE_HTTP_BIN, {}, launcher);
    spindle::test::Client c(server.port());
    REQUIRE(c.send_all("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
    CHECK_THAT(c.recv_all(), Catch::StartsWith("HTTP/1.1 200"));
    CHECK(server.stop() == 0);
  }
  SECTION("spindle-kv") {
    KvDir dir;
    {
      spindle::test::Server server(SPINDLE_KV_BIN, {"--dir", dir.path.string()}, launcher);
      spindle::test::Client c(server.port());
      REQUIRE(c.send_all("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\n"));
      CHECK(c.recv_n(5) == "+OK\r\n");
      CHECK(server.stop() == 0);
    }
    // The record is on disk: a second server (on epoll too) reads it back.
    spindle::test::Server server(SPINDLE_KV_BIN, {"--dir", dir.path.string()}, launcher);
    spindle::test::Client c(server.port());
    REQUIRE(c.send_all("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"));
    CHECK(c.recv_n(11) == "$5\r\nvalue\r\n");
    CHECK(server.stop() == 0);
  }
}
