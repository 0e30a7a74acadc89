// pidfd_open(2) and pidfd_send_signal(2) as system calls: glibc 2.36's
// <sys/pidfd.h> declares them without C linkage, so C++ cannot link them.
#pragma once

#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

namespace spindle::process::detail {

// A pidfd (close-on-exec) of process `pid`, or -1 with errno.
inline int open_pidfd(pid_t pid) noexcept {
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
}

// 0, or -1 with errno.
inline int send_signal(int pidfd, int signal) noexcept {
  return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, signal, nullptr, 0));
}

}  // namespace spindle::process::detail
