// spindle::process: spawn, pipes as streams, exit statuses, waits with
// deadlines and aborts, kill, and what a destroyed Child does.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "proc_test_support.hpp"
#include "runtime_harness.hpp"
#include "temp_dir.hpp"
#include "xorshift.hpp"

using namespace std::chrono_literals;
using Catch::Matchers::Contains;
using spindle::errc;
using spindle::process::ExitStatus;
using spindle::process::Stdio;
namespace process = spindle::process;

namespace {

// `n` bytes of every value, in a seeded order.
std::string pattern(std::size_t n) {
  spindle::test::Xorshift rng(n);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng.next());
  return s;
}

// Whether `pid` names no process, not even a zombie.
bool gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

}  // namespace

TEST_CASE("process: cat echoes 1 MiB through piped stdin and stdout, byte for byte", "[process]") {
  spindle::test::require_programs({"cat"});
  spindle::test::on_workers([] {
    auto child = process::spawn({"cat"}, {.std_in = Stdio::kPipe, .std_out = Stdio::kPipe});
    REQUIRE(child);
    CHECK(child->pid() > 0);
    CHECK_FALSE(child->std_err().is_open());
    const std::string data = pattern(std::size_t{1} << 20);
    // Written and read at once by two fibers: cat holds no more than a pipe.
    auto writer = spindle::spawn([&] {
      auto r = child->std_in().write_all(data);
      child->std_in().close();
      return r;
    });
    std::string echoed;
    CHECK(child->std_out().read_to_end(echoed).value() == data.size());
    CHECK(writer.join().value().has_value());
    CHECK(echoed == data);
    CHECK(child->wait().value() == ExitStatus{.code = 0});
  });
}

TEST_CASE("process: read_exact and write on a pipe, and end of stream", "[process]") {
  spindle::test::require_programs({"cat"});
  spindle::test::on_workers([] {
    auto child = process::spawn({"cat"}, {.std_in = Stdio::kPipe, .std_out = Stdio::kPipe});
    REQUIRE(child);
    const std::string_view hello = "hello";
    CHECK(child->std_in().write(std::as_bytes(std::span(hello))).value() == hello.size());
    char buf[5];
    REQUIRE(child->std_out().read_exact(std::span(buf)));
    CHECK(std::string_view(buf, 5) == hello);
    // A read with nothing to read waits, and its timeout leaves the pipe usable.
    auto none = child->std_out().read(std::span(buf), 10ms);
    REQUIRE_FALSE(none);
    CHECK(none.error() == errc::timed_out);
    REQUIRE(child->std_in().write_all("bye"));
    child->std_in().close();
    CHECK(child->std_in().write_all("x").error() == errc::closed);
    // End of stream before the whole message: closed, and the pipe with it.
    auto cut = child->std_out().read_exact(std::span(buf));
    REQUIRE_FALSE(cut);
    CHECK(cut.error() == errc::closed);
    CHECK(child->std_out().read(std::span(buf)).error() == errc::closed);
    CHECK(child->wait().value().success());
  });
}

TEST_CASE("process: the exit status of sh -c 'exit 3'", "[process]") {
  spindle::test::require_programs({});
  spindle::test::on_workers([] {
    auto child = process::spawn({"sh", "-c", "exit 3"});
    REQUIRE(child);
    const ExitStatus st = child->wait().value();
    CHECK(st == ExitStatus{.code = 3});
    CHECK(st.exited());
    CHECK_FALSE(st.success());
    CHECK(st.to_string() == "exited with code 3");
    // Reaped once; every later call answers from what it learned.
    CHECK(child->wait().value() == st);
    CHECK(child->try_wait().value() == st);
    CHECK(child->kill(SIGTERM));
  });
}

TEST_CASE("process: a child killed by a signal reports the signal", "[process]") {
  spindle::test::require_programs({});
  spindle::test::on_workers([] {
    auto child = process::spawn({"/bin/sh", "-c", "kill -TERM $$"});
    REQUIRE(child);
    const ExitStatus st = child->wait().value();
    CHECK(st == ExitStatus{.signal = SIGTERM});
    CHECK_FALSE(st.exited());
    CHECK(st.to_string() == "killed by SIGTERM");
  });
}

TEST_CASE("process: a wait with a deadline times out; then kill and wait succeed", "[process]") {
  spindle::test::require_programs({"sleep"});
  spindle::test::on_workers([] {
    auto child = process::spawn({"sleep", "60"});
    REQUIRE(child);
    auto r = child->wait(10ms);
    REQUIRE_FALSE(r);
    CHECK(r.error() == errc::timed_out);
    r = child->wait(spindle::Timeout::at(spindle::Clock::now() + 10ms));
    CHECK(r.error() == errc::timed_out);
    CHECK(child->try_wait().value() == std::nullopt);  // still running
    REQUIRE(child->kill(SIGTERM));
    CHECK(child->wait().value() == ExitStatus{.signal = SIGTERM});
  });
}

TEST_CASE("process: an aborted wait leaves the child running", "[process]") {
  spindle::test::require_programs({"sleep"});
  spindle::test::on_workers([] {
    auto child = process::spawn({"sleep", "60"});
    REQUIRE(child);
    auto waiter = spindle::spawn([&] { return child->wait(); });
    (void)spindle::this_fiber::sleep_for(spindle::test::kSettle);
    waiter.abort();
    CHECK(spindle::test::joined_error(waiter) == errc::aborted);
    CHECK(child->try_wait().value() == std::nullopt);
    REQUIRE(child->kill());
    CHECK(child->wait().value() == ExitStatus{.signal = SIGKILL});
  });
}

TEST_CASE("process: kill_on_abort kills the child when its waiting fiber is aborted", "[process]") {
  spindle::test::require_programs({"sleep"});
  spindle::test::on_workers([] {
    auto child = process::spawn({"sleep", "60"}, {.kill_on_abort = true});
    REQUIRE(child);
    auto waiter = spindle::spawn([&] { return child->wait(); });
    (void)spindle::this_fiber::sleep_for(spindle::test::kSettle);
    waiter.abort();
    CHECK(spindle::test::joined_error(waiter) == errc::aborted);
    CHECK(child->wait(10s).value() == ExitStatus{.signal = SIGKILL});
  });
}

TEST_CASE("process: the environment and working directory reach the child", "[process]") {
  spindle::test::require_programs({});
  spindle::test::TempDir dir;
  const std::string where = std::filesystem::canonical(dir.path()).string();
  ::setenv("SPINDLE_INHERITED", "parent", 1);  // before any other thread runs
  spindle::test::on_workers([&] {
    auto both = process::output({"sh", "-c", "echo $X; echo $SPINDLE_INHERITED; pwd"},
                                {.env = {"X=hello", "SPINDLE_INHERITED=replaced"}, .cwd = where});
    REQUIRE(both);
    CHECK(both->out == "hello\nreplaced\n" + where + "\n");
    auto only = process::output({"/bin/sh", "-c", "echo \"$X-$SPINDLE_INHERITED-$HOME\""},
                                {.inherit_env = false, .env = {"X=only"}});
    REQUIRE(only);
    CHECK(only->out == "only--\n");
    auto inherited = process::output({"sh", "-c", "echo $SPINDLE_INHERITED"});
    CHECK(inherited.value().out == "parent\n");
  });
}

TEST_CASE("process: stdin, stdout and stderr from /dev/null", "[process]") {
  spindle::test::require_programs({"cat"});
  spindle::test::on_workers([] {
    auto child =
        process::spawn({"sh", "-c", "cat; echo done; echo oops >&2"},
                       {.std_in = Stdio::kNull, .std_out = Stdio::kPipe, .std_err = Stdio::kNull});
    REQUIRE(child);
    std::string out;
    REQUIRE(child->std_out().read_to_end(out));
    CHECK(out == "done\n");
    CHECK(child->wait().value().success());
  });
}

TEST_CASE("process: the child gets descriptors 0, 1 and 2 only", "[process]") {
  spindle::test::require_programs({});
  spindle::test::on_workers([] {
    // Not close-on-exec, and still not inherited.
    const spindle::UniqueFd extra(::fcntl(STDERR_FILENO, F_DUPFD, 50));
    REQUIRE(extra);
    const std::string fd = std::to_string(extra.get());
    auto r = process::output(
        {"sh", "-c", "for fd in 1 " + fd + "; do test -e /proc/self/fd/$fd && echo $fd; done"});
    CHECK(r.value().out == "1\n");
  });
}

TEST_CASE("process: a write to a child that stopped reading fails with EPIPE", "[process]") {
  spindle::test::require_programs({});
  spindle::test::on_workers([] {
    auto child = process::spawn({"sh", "-c", "exit 0"}, {.std_in = Stdio::kPipe});
    REQUIRE(child);
    REQUIRE(child->wait().value().success());
    auto w = child->std_in().write_all(std::string(100000, 'x'));  // SIGPIPE is ignored
    REQUIRE_FALSE(w);
    CHECK(w.error() == std::errc::broken_pipe);
  });
}

TEST_CASE("process: spawn of a missing program fails with ENOENT naming it", "[process]") {
  spindle::test::TempDir dir;
  spindle::test::on_workers([&] {
    auto missing = process::spawn({"spindle-no-such-program", "arg"});
    REQUIRE_FALSE(missing);
    CHECK(missing.error() == std::errc::no_such_file_or_directory);
    CHECK(missing.error().value() == ENOENT);
    CHECK(missing.error().message() == "spawn spindle-no-such-program: No such file or directory");
    auto absolute = process::spawn({"/nonexistent/spindle-program"});
    REQUIRE_FALSE(absolute);
    CHECK(absolute.error() == std::errc::no_such_file_or_directory);
    CHECK_THAT(absolute.error().message(), Contains("/nonexistent/spindle-program"));
    const std::string nowhere = (dir.path() / "nowhere").string();
    auto no_dir = process::spawn({"sh", "-c", "true"}, {.cwd = nowhere});
    REQUIRE_FALSE(no_dir);
    CHECK(no_dir.error() == std::errc::no_such_file_or_directory);
    CHECK_THAT(no_dir.error().message(), Contains("sh in " + nowhere));
    // Value() throws the same error, message and all.
    CHECK_THROWS_WITH(missing.value(), Contains("spindle-no-such-program"));
  });
}

TEST_CASE("process: invalid arguments and options are refused naming them", "[process]") {
  spindle::test::run([] {
    CHECK_THROWS_WITH(process::spawn({}), Contains("argv has no program"));
    CHECK_THROWS_WITH(process::spawn({"sh"}, {.env = {"NOVALUE"}}),
                      Contains("Options::env entry 'NOVALUE' is not NAME=VALUE"));
    CHECK_THROWS_WITH(process::spawn({"sh"}, {.env = {"=x"}}), Contains("'=x'"));
    CHECK_THROWS_WITH(process::spawn({"sh", std::string("a\0b", 3)}),
                      Contains("argv[1] contains a NUL byte"));
  });
}

TEST_CASE("process: a destroyed Child kills and reaps its process", "[process]") {
  spindle::test::require_programs({"sleep"});
  // Not on_workers: the reaper's pipe and the pidfds it holds for a moment
  // would count as descriptors left open.
  spindle::test::run(
      [] {
        pid_t pid = 0;
        {
          auto child = process::spawn({"sleep", "60"}, {.std_out = Stdio::kPipe});
          REQUIRE(child);
          pid = child->pid();
        }
        CHECK(spindle::test::eventually([&] { return gone(pid); }));
        // One that already ended is reaped at once, without the reaper.
        {
          auto child = process::spawn({"sh", "-c", "exit 0"});
          REQUIRE(child);
          pid = child->pid();
          CHECK(spindle::test::eventually([&] { return child->try_wait().value().has_value(); }));
        }
        CHECK(gone(pid));
      },
      spindle::Config{.workers = 2});
}

TEST_CASE("process: moving a Child keeps one owner of the process", "[process]") {
  spindle::test::require_programs({});
  spindle::test::on_workers([] {
    auto spawned = process::spawn({"sh", "-c", "exit 5"});
    REQUIRE(spawned);
    process::Child child = std::move(*spawned);
    CHECK(spawned->pid() == 0);
    CHECK(spawned->wait().error() == errc::closed);
    CHECK(spawned->kill().error() == errc::closed);
    CHECK(child.wait().value() == ExitStatus{.code = 5});
  });
}
