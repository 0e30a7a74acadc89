// Child: every call goes through the pidfd, so none can reach another
// process that reused the pid. wait() is one io::waitid (IORING_OP_WAITID,
// or a readiness wait on the pidfd and waitid(WNOHANG)); try_wait and the
// destructor's reap are waitid(WNOHANG) on the calling thread.

#include "spindle/proc/child.hpp"

#include <signal.h>
#include <sys/wait.h>

#include <cerrno>
#include <utility>

#include "pidfd.hpp"
#include "reaper.hpp"
#include "spindle/sched/io.hpp"

namespace spindle::process {
namespace {

ExitStatus status_of(const siginfo_t& info) noexcept {
  if (info.si_code == CLD_EXITED) return {.code = info.si_status};
  return {.signal = info.si_status, .core_dumped = info.si_code == CLD_DUMPED};
}

// waitid(WEXITED | WNOHANG): the status if the child has ended (reaping
// it), nullopt while it runs.
Result<std::optional<ExitStatus>> reap_now(int pidfd) noexcept {
  siginfo_t info{};  // si_pid stays 0 if the child still runs
  while (::waitid(P_PIDFD, static_cast<id_t>(pidfd), &info, WEXITED | WNOHANG) != 0) {
    if (errno != EINTR) return errno_failure(errno);
  }
  if (info.si_pid == 0) return std::nullopt;
  return status_of(info);
}

}  // namespace

Child::Child(pid_t pid, UniqueFd pidfd, Pipe in, Pipe out, Pipe err, bool kill_on_abort) noexcept
    : pidfd_(std::move(pidfd)),
      pid_(pid),
      in_(std::move(in)),
      out_(std::move(out)),
      err_(std::move(err)),
      kill_on_abort_(kill_on_abort) {}

Child::Child(Child&& o) noexcept
    : pidfd_(std::move(o.pidfd_)),
      pid_(std::exchange(o.pid_, 0)),
      in_(std::move(o.in_)),
      out_(std::move(o.out_)),
      err_(std::move(o.err_)),
      status_(std::exchange(o.status_, std::nullopt)),
      kill_on_abort_(o.kill_on_abort_) {}

Child& Child::operator=(Child&& o) noexcept {
  if (this != &o) {
    release();
    pidfd_ = std::move(o.pidfd_);
    pid_ = std::exchange(o.pid_, 0);
    in_ = std::move(o.in_);
    out_ = std::move(o.out_);
    err_ = std::move(o.err_);
    status_ = std::exchange(o.status_, std::nullopt);
    kill_on_abort_ = o.kill_on_abort_;
  }
  return *this;
}

Child::~Child() { release(); }

void Child::release() noexcept {
  if (!pidfd_ || status_) {
    pidfd_.reset();
    return;
  }
  if (auto ended = reap_now(pidfd_.get()); !ended || *ended) {
    pidfd_.reset();  // reaped now, or nothing left to reap (ECHILD)
    return;
  }
  (void)detail::send_signal(pidfd_.get(), SIGKILL);
  detail::reap_later(std::move(pidfd_));
}

Result<ExitStatus> Child::wait(Timeout timeout) {
  if (status_) return *status_;
  if (!pidfd_) return failure(errc::closed);
  siginfo_t info{};
  if (auto r = io::waitid(pidfd_.get(), info, WEXITED, {.deadline = timeout.deadline()}); !r) {
    if (r.error() == errc::aborted && kill_on_abort_) (void)kill(SIGKILL);
    return failure(r.error());
  }
  status_ = status_of(info);
  return *status_;
}

Result<std::optional<ExitStatus>> Child::try_wait() {
  if (status_) return status_;
  if (!pidfd_) return failure(errc::closed);
  auto r = reap_now(pidfd_.get());
  if (r && *r) status_ = **r;
  return r;
}

Result<void> Child::kill(int signal) {
  if (status_) return {};
  if (!pidfd_) return failure(errc::closed);
  if (detail::send_signal(pidfd_.get(), signal) != 0) return errno_failure(errno);
  return {};
}

}  // namespace spindle::process
