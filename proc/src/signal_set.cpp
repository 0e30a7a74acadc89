// SignalSet: the set's signals blocked, a signalfd, and a wait that parks the
// fiber on io::poll (a POLL_ADD on io_uring, an epoll registration on the
// epoll backend) until the signalfd is readable, then takes one signal with
// a non-blocking read(2) on the fiber.
//
// Rejected: io::read of a blocking signalfd through the ring. A ring that
// cannot read it without blocking (before signalfd's read_iter, Linux 6.8)
// hands the read to a kernel worker thread, which sees only process-directed
// signals and its own; a readiness wait and a read on the fiber behave the
// same on every kernel and backend.
//
// The signals claimed by live SignalSets are kept process-wide, so a second
// set for one of them is refused at construction instead of racing the
// first for every delivery.

#include "spindle/proc/signal_set.hpp"

#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <system_error>
#include <utility>

#include "spindle/base/lock_guard.hpp"
#include "spindle/base/thread_mutex.hpp"
#include "spindle/sched/config.hpp"
#include "spindle/sched/io.hpp"
#include "spindle/sched/this_fiber.hpp"
#include "thread_masks.hpp"

namespace spindle::signals {
namespace {

// The signals of live SignalSets. Thread-safe.
class Claims {
 public:
  // Claims every signal of `set`, or throws std::invalid_argument naming one
  // already claimed, claiming none.
  void claim(const sigset_t& set) {
    LockGuard lock(mutex_);
    for (int sig = 1; sig < NSIG; ++sig) {
      if (sigismember(&set, sig) == 1 && sigismember(&claimed_, sig) == 1) {
        throw std::invalid_argument("spindle::signals::SignalSet: " + name(sig) +
                                    " is already in another SignalSet (each signal goes to one "
                                    "signalfd reader, so two sets may not share one)");
      }
    }
    for (int sig = 1; sig < NSIG; ++sig) {
      if (sigismember(&set, sig) == 1) sigaddset(&claimed_, sig);
    }
  }

  void release(const sigset_t& set) noexcept {
    LockGuard lock(mutex_);
    for (int sig = 1; sig < NSIG; ++sig) {
      if (sigismember(&set, sig) == 1) sigdelset(&claimed_, sig);
    }
  }

 private:
  spindle::detail::ThreadMutex mutex_;
  sigset_t claimed_ SPINDLE_GUARDED_BY(mutex_) = {};
};

Claims& claims() {
  static Claims c;
  return c;
}

// Why `sig` may not be in a SignalSet; null if it may.
const char* refusal(int sig) noexcept {
  switch (sig) {
    case SIGKILL:
    case SIGSTOP:
      return "cannot be blocked";
    case SIGSEGV:
    case SIGBUS:
    case SIGFPE:
    case SIGILL:
      return "reports a fault, which kills the process while the signal is blocked";
    default:
      break;
  }
  if (sig == stall_capture_signal())
    return "is the stall detector's, which sends it to a stalled worker";
  return nullptr;
}

// The set of `numbers`, or std::invalid_argument naming the first that
// cannot be in one.
sigset_t make_set(std::initializer_list<int> numbers) {
  if (numbers.size() == 0) {
    throw std::invalid_argument("spindle::signals::SignalSet: the set of signals is empty");
  }
  sigset_t set;
  sigemptyset(&set);
  for (const int sig : numbers) {
    const char* why = refusal(sig);
    if (why == nullptr && sigaddset(&set, sig) != 0) why = "is not a signal this process may block";
    if (why != nullptr) {
      throw std::invalid_argument("spindle::signals::SignalSet: " + name(sig) + " " + why);
    }
  }
  return set;
}

SignalInfo info_of(const signalfd_siginfo& s) noexcept {
  return {.number = static_cast<int>(s.ssi_signo),
          .code = s.ssi_code,
          .pid = static_cast<pid_t>(s.ssi_pid),
          .uid = static_cast<uid_t>(s.ssi_uid),
          .value = s.ssi_int};
}

}  // namespace

std::string name(int number) {
  if (number >= SIGRTMIN && number <= SIGRTMAX) {
    return number == SIGRTMIN ? "SIGRTMIN" : "SIGRTMIN+" + std::to_string(number - SIGRTMIN);
  }
  if (const char* abbrev = ::sigabbrev_np(number)) return std::string("SIG") + abbrev;
  return "signal " + std::to_string(number);
}

SignalSet::SignalSet(std::initializer_list<int> numbers) : set_(make_set(numbers)) {
  claims().claim(set_);
  sigset_t old;
  if (const int rc = ::pthread_sigmask(SIG_BLOCK, &set_, &old); rc != 0) {
    claims().release(set_);
    throw std::system_error(rc, std::system_category(), "spindle::signals: pthread_sigmask");
  }
  auto undo = [&] {
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    claims().release(set_);
  };
  if (auto thread = detail::thread_not_blocking(set_)) {
    undo();
    throw std::logic_error(
        "spindle::signals::SignalSet: " + *thread +
        ", so such a signal sent to the process could go to that thread (its default action "
        "or handler) instead of the signalfd; construct the SignalSet before the Runtime or any "
        "other thread starts, so that every thread inherits the mask, or block the set in "
        "every thread first");
  }
  // Non-blocking: it is read only after a readiness wait said it is readable.
  fd_.reset(::signalfd(-1, &set_, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!fd_) {
    const int err = errno;
    undo();
    throw std::system_error(err, std::system_category(), "spindle::signals: signalfd");
  }
}

SignalSet::SignalSet(SignalSet&& o) noexcept : set_(o.set_), fd_(std::move(o.fd_)) {}

SignalSet& SignalSet::operator=(SignalSet&& o) noexcept {
  if (this != &o) {
    release();
    set_ = o.set_;
    fd_ = std::move(o.fd_);
  }
  return *this;
}

SignalSet::~SignalSet() { release(); }

void SignalSet::release() noexcept {
  if (!fd_) return;
  fd_.reset();
  claims().release(set_);
}

bool SignalSet::contains(int number) const noexcept { return sigismember(&set_, number) == 1; }

Result<SignalInfo> SignalSet::wait(Timeout timeout) {
  if (!fd_) return failure(errc::closed);
  if (this_fiber::aborted()) return failure(errc::aborted);
  const Deadline deadline = timeout.deadline();
  for (;;) {
    signalfd_siginfo s;
    const ssize_t n = ::read(fd_.get(), &s, sizeof s);
    if (n == static_cast<ssize_t>(sizeof s)) return info_of(s);
    if (n < 0 && errno != EAGAIN && errno != EINTR) return errno_failure(errno);
    // Another fiber may take the signal first: then this one waits again.
    if (auto ready = io::poll(fd_.get(), POLLIN, {.deadline = deadline}); !ready) {
      return failure(ready.error());
    }
  }
}

}  // namespace spindle::signals
