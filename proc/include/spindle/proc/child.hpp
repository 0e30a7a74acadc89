// Child: a running child process made by process::spawn (spawn.hpp): its
// pipes, its wait, and signals to it, through its pidfd.
#pragma once

#include <sys/types.h>

#include <csignal>
#include <optional>
#include <string>
#include <vector>

#include "spindle/base/result.hpp"
#include "spindle/base/timeout.hpp"
#include "spindle/base/unique_fd.hpp"
#include "spindle/proc/exit_status.hpp"
#include "spindle/proc/pipe.hpp"

namespace spindle::process {

struct Options;

// Fiber-only for wait() (its other calls never suspend and work on any
// thread); not thread-safe: one call at a time, except that its Pipes are
// independent objects (std_in(), std_out() and std_err() may be used, or
// moved out, by other fibers meanwhile).
//
// A destroyed Child whose process still runs kills it: SIGKILL through the
// pidfd, and a process-wide reaper thread waits for it, so no zombie stays
// behind and no worker blocks. A process that already ended is reaped at
// once. So a fiber's end (or abort) takes its children's processes with it,
// as it takes its child fibers; wait() for the ones that must finish.
class Child {
 public:
  // No process: wait() and kill() fail with errc::closed.
  Child() noexcept = default;
  Child(Child&& o) noexcept;
  // Ends the process this Child held, as the destructor does.
  Child& operator=(Child&& o) noexcept;
  ~Child();

  pid_t pid() const noexcept { return pid_; }
  // The pidfd (close-on-exec), for poll(2) or pidfd_getfd(2); -1 if none.
  int pidfd() const noexcept { return pidfd_.get(); }

  // The parent's ends of the child's stdin, stdout and stderr: open for the
  // ones spawned as Stdio::kPipe, closed otherwise.
  Pipe& std_in() noexcept { return in_; }
  Pipe& std_out() noexcept { return out_; }
  Pipe& std_err() noexcept { return err_; }

  // Waits for the process to end and reaps it: IORING_OP_WAITID on an
  // io_uring ring that has it (Linux 6.7), else a readiness wait on the
  // pidfd and waitid(WNOHANG). Once it returned a status, every later call
  // returns the same at once. A Timeout() waits for ever. On
  // errc::timed_out or errc::aborted the process keeps running and a later
  // wait() still works, unless Options::kill_on_abort was set: then an
  // aborted wait sends it SIGKILL before returning. errc::closed for a
  // Child without a process.
  // Suspends: until the process ends, the timeout or an abort.
  Result<ExitStatus> wait(Timeout timeout = {});

  // The status if the process has ended (reaping it), nullopt while it
  // runs. Never suspends.
  Result<std::optional<ExitStatus>> try_wait();

  // Sends `signal` to the process (pidfd_send_signal: never another process
  // that reused its pid). Succeeds, doing nothing, once wait() or
  // try_wait() has returned its status. Never suspends.
  Result<void> kill(int signal = SIGKILL);

 private:
  friend Result<Child> spawn(const std::vector<std::string>& argv, const Options& options);
  Child(pid_t pid, UniqueFd pidfd, Pipe in, Pipe out, Pipe err, bool kill_on_abort) noexcept;

  // Kills and reaps the process if it has not been waited for (see above).
  void release() noexcept;

  UniqueFd pidfd_;
  pid_t pid_ = 0;
  Pipe in_;
  Pipe out_;
  Pipe err_;
  std::optional<ExitStatus> status_;  // once reaped
  bool kill_on_abort_ = false;
};

}  // namespace spindle::process
