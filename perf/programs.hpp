// The programs a workload runs (a baseline such as fio, a server, a load
// generator): finding them, and running one as a child process that dies
// with the measurement's process.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "unique_fd.hpp"

namespace spindle::perf {

// The first executable `name` in PATH (as execvp looks), or "".
std::string find_on_path(std::string_view name);

// "exited with status N", "killed by signal N (name)", ... for a wait status.
std::string describe_status(int status);

struct ProgramOptions {
  int cpu = -1;                // pinned to this CPU (and so are its threads); -1: not pinned
  bool capture_stdout = true;  // else its standard output is /dev/null
  bool merge_stderr = false;   // its standard error goes where its output goes; else it is ours
  // "NAME=value" entries set in its environment, over what it inherits.
  std::vector<std::string> env = {};
};

// How a program ended.
struct ProgramExit {
  int status = 0;    // the wait status
  double cpu_s = 0;  // its user + system CPU time (wait4's rusage)
  std::string out;   // its standard output, when captured
  bool ok() const;   // exited with status 0
};

// A program running in a child process: standard input /dev/null, killed with
// SIGKILL if the process that started it dies (PR_SET_PDEATHSIG; start it
// from a single-threaded process). Not thread-safe.
// Invariant: pid_ > 0 until the child is reaped; the destructor kills and
// reaps it on every path.
class Program {
 public:
  // Starts `exe` with `args`. Throws std::system_error if it cannot fork; an
  // exec that fails ends the child with status 127.
  Program(const std::string& exe, const std::vector<std::string>& args,
          const ProgramOptions& options = {});
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  ~Program() { kill(); }

  pid_t pid() const noexcept { return pid_; }
  // True while it runs; false once it has ended (it is then reaped, and
  // ended() says how).
  bool running();
  const ProgramExit& ended() const noexcept { return exit_; }
  void signal(int sig) const;
  // Reads its output to the end and waits for it to exit.
  ProgramExit wait();
  // SIGKILL, then reaped; nothing if it has ended.
  void kill() noexcept;

 private:
  void reaped(int status, const rusage& usage);

  pid_t pid_ = -1;
  UniqueFd out_;  // the read end of its standard output, when captured
  ProgramExit exit_;
};

// Runs `exe` with `args` to its end and returns its standard output (with
// `options`, the merged standard error too). A status other than 0 throws
// PerfError with the output.
std::string run_capture(const std::string& exe, const std::vector<std::string>& args,
                        const ProgramOptions& options = {});

}  // namespace spindle::perf
