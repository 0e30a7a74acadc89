// spindle::signals: process signals as something a fiber waits for. A
// SignalSet blocks its signals and takes them from a signalfd; wait() parks
// the calling fiber on the runtime's I/O backend (a readiness wait on the
// signalfd), never its worker.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <initializer_list>
#include <string>

#include "spindle/base/result.hpp"
#include "spindle/base/timeout.hpp"
#include "spindle/base/unique_fd.hpp"

namespace spindle::signals {

// One signal as wait() returns it: the essentials of its siginfo.
struct SignalInfo {
  int number = 0;  // SIGTERM, SIGHUP, SIGRTMIN + 1, ...
  // si_code: SI_USER (kill), SI_QUEUE (sigqueue), SI_TKILL (tgkill),
  // SI_KERNEL, CLD_EXITED (SIGCHLD), ...
  int code = 0;
  // The sender, for a signal a process sent (kill, sigqueue, tgkill) and for
  // SIGCHLD (the child); 0 for the kernel's own.
  pid_t pid = 0;
  uid_t uid = 0;
  int value = 0;  // sigqueue(3)'s sival_int; 0 otherwise
};

// The signals of a set, blocked in every thread, and read from one signalfd.
//
// The mask rule: a process-directed signal (kill(2), a terminal's ^C) goes
// to any one thread that does not block it, and there takes its default
// action (most signals end the process) or runs a handler, and never reaches
// the signalfd. So every thread of the process must block the set. The
// constructor blocks it in the calling thread, and threads inherit the mask
// of the thread that starts them: construct the SignalSet first in main(),
// before the Runtime (or anything else) starts a thread, and every worker,
// blocking-pool thread and helper thread started later blocks it too. Or
// block the set in every thread yourself before constructing it. The
// constructor checks the rule for every thread alive then (their masks in
// /proc/self/task; where /proc is missing it cannot check) and throws if one
// does not block the set; a thread started later that unblocks it is not
// seen.
//
// Thread-directed signals (raise(3), pthread_kill(3), tgkill(2)) wait on the
// thread they were sent to, and a signalfd read shows them only from that
// thread: a fiber may run on any worker, so send process-directed ones
// (kill(getpid(), ...)) to a SignalSet.
//
// The signals stay blocked after the SignalSet is destroyed (threads started
// meanwhile inherited the mask; unblocking in one thread would not undo it),
// so one that arrives later waits, pending, for the next SignalSet of it.
//
// wait() may be called by any number of fibers at once (each signal goes to
// one of them); the object itself is not thread-safe (construct, move and
// destroy it with no wait in flight).
class SignalSet {
 public:
  // Blocks `numbers` in the calling thread, checks the mask rule and opens
  // the signalfd. Throws std::invalid_argument naming the signal for an
  // empty set, a number that is not a signal, one that cannot be waited for
  // (SIGKILL, SIGSTOP, the faults SIGSEGV, SIGBUS, SIGFPE, SIGILL, which
  // would kill the process if blocked, and SIGRTMIN+5, the stall detector's:
  // docs/debugging.md), or one already in another live
  // SignalSet (each signal goes to one signalfd reader, so two sets for it
  // would race for every delivery); std::logic_error naming the signal and
  // the thread if a thread does not block the set (then the calling
  // thread's mask is restored); std::system_error if signalfd fails.
  explicit SignalSet(std::initializer_list<int> numbers);
  SignalSet(SignalSet&& o) noexcept;
  SignalSet& operator=(SignalSet&& o) noexcept;
  // Closes the signalfd and gives its signals up for another SignalSet.
  ~SignalSet();

  // The next signal of the set, each returned once. Several pending at once
  // come lowest number first (the kernel's order); a standard signal sent
  // again before it was taken is one signal (the kernel keeps one of each),
  // while real-time signals queue and come in the order sent. Returns
  // a pending signal even after the timeout or the scope's deadline has
  // passed. Errors: errc::timed_out (Timeout() waits for ever),
  // errc::aborted (the fiber is aborted, checked first: a signal then stays
  // pending), errc::closed for a moved-from set. Fiber-only.
  // Suspends: until a signal of the set arrives, the timeout or an abort.
  Result<SignalInfo> wait(Timeout timeout = {});

  bool contains(int number) const noexcept;
  // The signalfd (non-blocking, close-on-exec); -1 for a moved-from set.
  int native_handle() const noexcept { return fd_.get(); }

 private:
  void release() noexcept;

  sigset_t set_{};
  UniqueFd fd_;
};

// "SIGTERM", "SIGRTMIN+3", "signal 99": for messages.
std::string name(int number);

}  // namespace spindle::signals
