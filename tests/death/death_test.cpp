#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <string>

#include "skip.hpp"

extern char** environ;

namespace {

struct Outcome {
  int status = 0;
  std::string err;
};

// Runs `path` with stderr captured.
Outcome run_capturing_stderr(const char* path) {
  int pipefd[2];
  REQUIRE(::pipe(pipefd) == 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipefd[1], 2);
  posix_spawn_file_actions_addclose(&actions, pipefd[0]);
  pid_t pid;
  char* argv[] = {const_cast<char*>(path), nullptr};
  REQUIRE(::posix_spawn(&pid, path, &actions, nullptr, argv, environ) == 0);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipefd[1]);
  Outcome o;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(pipefd[0], buf, sizeof buf)) > 0)
    o.err.append(buf, static_cast<std::size_t>(n));
  ::close(pipefd[0]);
  REQUIRE(::waitpid(pid, &o.status, 0) == pid);
  return o;
}

}  // namespace

TEST_CASE("a fiber overflowing its stack is reported by id and name, then the process aborts",
          "[death]") {
#if defined(SPINDLE_ASAN)
  SPINDLE_SKIP("ASan reports stack overflows itself");
#endif
  const Outcome o = run_capturing_stderr(SPINDLE_OVERFLOW_HELPER);
  INFO("stderr: " << o.err);
  REQUIRE(WIFSIGNALED(o.status));
  CHECK(WTERMSIG(o.status) == SIGABRT);
  CHECK_THAT(o.err, Catch::Contains("fiber stack overflow"));
  CHECK_THAT(o.err, Catch::Matches("(.|\n)*fiber [0-9]+ 'overflower'(.|\n)*"));
}

TEST_CASE("declaring a runtime counter past kMaxRuntimeCounters says so and aborts", "[death]") {
  const Outcome o = run_capturing_stderr(SPINDLE_COUNTER_OVERFLOW_HELPER);
  INFO("stderr: " << o.err);
  REQUIRE(WIFSIGNALED(o.status));
  CHECK(WTERMSIG(o.status) == SIGABRT);
  CHECK_THAT(o.err, Catch::Contains("cannot declare runtime counter 'runtime_overflow_"));
  CHECK_THAT(o.err, Catch::Contains("kMaxRuntimeCounters are declared already"));
}

TEST_CASE("a plain thread waking a simulated fiber says so and aborts", "[death]") {
  const Outcome o = run_capturing_stderr(SPINDLE_SIM_FOREIGN_WAKE_HELPER);
  INFO("stderr: " << o.err);
  REQUIRE(WIFSIGNALED(o.status));
  CHECK(WTERMSIG(o.status) == SIGABRT);
  CHECK_THAT(o.err, Catch::Contains("a thread outside the simulation woke one of its fibers"));
}
