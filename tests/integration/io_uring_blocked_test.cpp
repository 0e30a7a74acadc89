// The apps where io_uring is refused, as in a default Docker or containerd
// container: each runs under spindle-no-io-uring (a seccomp filter that makes
// io_uring_setup fail with EPERM) and must stop at once with one message that
// says what is missing and how to allow it.
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

void check_refused(const std::vector<std::string>& app) {
  std::vector<std::string> argv{kNoIoUring};
  argv.insert(argv.end(), app.begin(), app.end());
  const auto run = spindle::test::run_program(argv, Ms(10'000));
  INFO(run.err);
  REQUIRE(run.code.has_value());
  if (*run.code == 125) SPINDLE_SKIP("%s", run.err.c_str());
  CHECK(*run.code != 0);
  CHECK_THAT(run.err, Catch::Contains("io_uring is unavailable (io_uring_setup: Operation not "
                                      "permitted)"));
  CHECK_THAT(run.err, Catch::Contains("kernel.io_uring_disabled"));
  CHECK_THAT(run.err, Catch::Contains("seccomp"));
}

}  // namespace

TEST_CASE("where io_uring_setup is refused, each app exits non-zero saying how to allow it",
          "[integration][backend]") {
  SECTION("spindle-echo") { check_refused({SPINDLE_ECHO_BIN, "--listen", "127.0.0.1:0"}); }
  SECTION("spindle-http") { check_refused({SPINDLE_HTTP_BIN, "--listen", "127.0.0.1:0"}); }
  SECTION("spindle-kv") {
    // A directory of its own, in case the app got as far as opening its log.
    const auto dir = std::filesystem::temp_directory_path() /
                     ("spindle-no-io-uring-kv-" + std::to_string(::getpid()));
    check_refused({SPINDLE_KV_BIN, "--listen", "127.0.0.1:0", "--dir", dir.string()});
    std::filesystem::remove_all(dir);
  }
}
