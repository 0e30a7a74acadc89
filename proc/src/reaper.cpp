// The reaper thread takes pidfds from a pipe (one int per write, atomic
// since it is shorter than PIPE_BUF; the write end is non-blocking, so a
// handover never waits) and waits for each child in turn with a blocking
// waitid. Each was sent SIGKILL, so each wait is short, unless the child is
// stuck in the kernel (uninterruptible sleep), which delays the ones behind
// it but loses none. The thread blocks every signal (a process-directed one
// must find a thread that means to take it, see SignalSet), lives as long
// as the process, and is started at the first handover.
//
// Rejected: a spawn_blocking call per child. A fiber ending because it was
// aborted may not spawn (an aborted node runs no new work), which is exactly
// when most Childs are destroyed, and a Child may be destroyed outside any
// runtime.

#include "reaper.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <exception>
#include <thread>

namespace spindle::process::detail {
namespace {

// Waits for the child of `pidfd` to end, reaping it.
void reap(int pidfd) noexcept {
  siginfo_t info;
  while (::waitid(P_PIDFD, static_cast<id_t>(pidfd), &info, WEXITED) != 0 && errno == EINTR) {
  }
}

[[noreturn]] void run(int in) {
  for (;;) {
    int pidfd = -1;
    const ssize_t n = ::read(in, &pidfd, sizeof pidfd);
    if (n == static_cast<ssize_t>(sizeof pidfd)) {
      reap(pidfd);
      ::close(pidfd);
    }
  }
}

// The write end of the reaper's pipe, starting the reaper the first time;
// -1 if it could not be started.
int reaper_input() noexcept {
  static const int input = [] {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return -1;
    if (::fcntl(p[1], F_SETFL, O_NONBLOCK) != 0) {
      ::close(p[0]);
      ::close(p[1]);
      return -1;
    }
    sigset_t all, old;
    sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &old);  // the thread inherits it
    bool started = true;
    try {
      std::thread([out = p[0]] { run(out); }).detach();
    } catch (const std::exception&) {  // std::system_error, std::bad_alloc
      started = false;
    }
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (!started) {
      ::close(p[0]);
      ::close(p[1]);
      return -1;
    }
    return p[1];
  }();
  return input;
}

}  // namespace

void reap_later(UniqueFd pidfd) noexcept {
  const int fd = pidfd.get();
  if (const int in = reaper_input();
      in >= 0 && ::write(in, &fd, sizeof fd) == static_cast<ssize_t>(sizeof fd)) {
    (void)pidfd.release();  // the reaper closes it
    return;
  }
  reap(fd);
}

}  // namespace spindle::process::detail
