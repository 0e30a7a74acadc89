// Helpers for fiber tests that must crash or change process-wide state: run a
// body in a fork()ed child with its stderr captured, and read /proc facts.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string>

namespace spindle::fiber::test {

// How a child ended and what it wrote to stderr.
struct ChildResult {
  int status = 0;
  std::string err;

  bool exited_with(int code) const { return WIFEXITED(status) && WEXITSTATUS(status) == code; }
  bool killed_by(int sig) const { return WIFSIGNALED(status) && WTERMSIG(status) == sig; }
  std::string describe() const {
    std::string s;
    if (WIFEXITED(status)) s = "exited with " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) s = "killed by signal " + std::to_string(WTERMSIG(status));
    return s + "; stderr: " + err;
  }
};

// Runs `body` (returning an exit code) in a fork()ed child whose stderr goes to
// a pipe. Catch2's own SIGSEGV/SIGABRT handlers are replaced by the default
// actions in the child so that a crash is reported as the signal itself.
template <typename Body>
ChildResult run_in_child(Body&& body) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) std::abort();
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) std::abort();
  if (pid == 0) {
    ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[0]);
    ::close(fds[1]);
    for (int sig : {SIGSEGV, SIGBUS, SIGABRT}) ::signal(sig, SIG_DFL);
    int code = 0;
    try {
      code = body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child threw: %s\n", e.what());
      code = 99;
    }
    std::fflush(stderr);
    ::_exit(code);
  }
  ::close(fds[1]);
  ChildResult result;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n > 0) {
      result.err.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(fds[0]);
  while (::waitpid(pid, &result.status, 0) < 0 && errno == EINTR) {
  }
  return result;
}

// Number of mappings (VMAs) of this process.
inline std::size_t count_mappings() {
  std::ifstream maps("/proc/self/maps");
  std::size_t lines = 0;
  for (std::string line; std::getline(maps, line);) ++lines;
  return lines;
}

inline long max_map_count() {
  std::ifstream f("/proc/sys/vm/max_map_count");
  long value = -1;
  f >> value;
  return value;
}

}  // namespace spindle::fiber::test
