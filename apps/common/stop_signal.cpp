#include "stop_signal.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <system_error>

#include "spindle/sched/io.hpp"
#include "spindle/sched/runtime.hpp"

namespace spindle::apps {

StopSignal::StopSignal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR1);
  if (const int rc = ::pthread_sigmask(SIG_BLOCK, &set, nullptr); rc != 0)
    throw std::system_error(rc, std::system_category(), "pthread_sigmask");
  // Non-blocking: it is read only after a POLL_ADD said it is readable.
  fd_ = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
  if (fd_ < 0) throw std::system_error(errno, std::system_category(), "signalfd");
}

StopSignal::~StopSignal() {
  if (fd_ >= 0) ::close(fd_);
}

Result<int> StopSignal::wait() {
  for (;;) {
    signalfd_siginfo info{};
    if (::read(fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
      if (info.ssi_signo != SIGUSR1) return static_cast<int>(info.ssi_signo);
      const std::string dump = current_runtime().dump();
      std::fputs(dump.c_str(), stderr);
      std::fflush(stderr);
      continue;
    }
    if (auto polled = io::poll(fd_, POLLIN); !polled) return failure(polled.error());
  }
}

}  // namespace spindle::apps
