// process::output: a program run to its end, stdout and stderr collected at
// once, its status, and its timeout.
#include <signal.h>

#include <catch2/catch.hpp>
#include <string>

#include "proc_test_support.hpp"
#include "runtime_harness.hpp"

using namespace std::chrono_literals;
using spindle::errc;
using spindle::process::ExitStatus;
namespace process = spindle::process;

TEST_CASE("output: stdout, stderr and the status of a program", "[process]") {
  spindle::test::require_programs({});
  spindle::test::on_workers([] {
    auto r = process::output({"sh", "-c", "echo out; echo err >&2; exit 4"});
    REQUIRE(r);
    CHECK(r->out == "out\n");
    CHECK(r->err == "err\n");
    CHECK(r->status == ExitStatus{.code = 4});
  });
}

TEST_CASE("output: a program that fills stderr before it writes stdout does not stall",
          "[process]") {
  spindle::test::require_programs({"head"});
  spindle::test::on_workers([] {
    // Many pipes' worth on stderr first: read only stdout, it would wait for
    // ever on a full stderr pipe.
    auto r = process::output(
        {"sh", "-c", "head -c 1000000 /dev/zero >&2; head -c 300000 /dev/zero; echo"},
        {.std_in = process::Stdio::kPipe});
    REQUIRE(r);
    CHECK(r->err.size() == 1000000);
    CHECK(r->out.size() == 300001);
    CHECK(r->status.success());
  });
}

TEST_CASE("output: the timeout ends a program that runs too long", "[process]") {
  spindle::test::require_programs({"sleep"});
  // Not on_workers: the killed child's pidfd is closed by the reaper, a
  // moment later.
  spindle::test::run([] {
    auto r = process::output({"sleep", "60"}, {}, 20ms);
    REQUIRE_FALSE(r);
    CHECK(r.error() == errc::timed_out);
    auto scoped =
        spindle::this_fiber::with_timeout(20ms, [] { return process::output({"sleep", "60"}); });
    CHECK(scoped.error() == errc::timed_out);
  });
}
