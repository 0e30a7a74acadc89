// Stack-overflow reporting.
//
// A fiber that runs off its stack touches the guard page below it and takes a
// SIGSEGV with no stack left to run a handler on, so the handler (for SIGSEGV
// and SIGBUS alike) runs on a per-thread alternate signal stack (SA_ONSTACK).
// It asks the describer installed by the scheduler whether the address is the
// guard of the fiber running on this thread; if so it names that fiber on
// stderr and aborts. Any other fault belongs to someone else: it goes to the
// handler that was installed before ours, or, when that was the default
// action, the default action is restored and the faulting instruction
// re-executes into it.
//
// Everything the handler does is async-signal-safe: an atomic load, the
// describer (required to be async-signal-safe), write(2), sigaction, raise and
// abort. No stdio, no allocation.

#include "spindle/fiber/overflow.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <system_error>

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

namespace spindle::fiber {
namespace {

constexpr std::size_t kAltStackSize = std::size_t{64} << 10;

// The describer in use; replaced by every install_overflow_handler() call.
// release in install_overflow_handler(); pairs with the acquire in on_fault().
std::atomic<OverflowDescriber> g_describer{nullptr};

std::once_flag g_install_once;
// The actions that were installed before ours. Written once, before our handler
// is installed (the kernel's sigaction orders the writes before any delivery),
// read-only afterwards.
struct sigaction g_prev_segv;
struct sigaction g_prev_bus;

// Appends to a fixed buffer, truncating; no allocation, no locale.
class SignalSafeText {
 public:
  void append(const char* s) noexcept {
    while (*s != '\0' && len_ < sizeof buf_) buf_[len_++] = *s++;
  }
  void append_hex(std::uintptr_t v) noexcept {
    char digits[2 * sizeof v];
    std::size_t n = 0;
    do {
      digits[n++] = "0123456789abcdef"[v & 0xf];
      v >>= 4;
    } while (v != 0);
    append("0x");
    while (n > 0 && len_ < sizeof buf_) buf_[len_++] = digits[--n];
  }
  void write_to(int fd) const noexcept {
    std::size_t done = 0;
    while (done < len_) {
      const ssize_t n = ::write(fd, buf_ + done, len_ - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      done += static_cast<std::size_t>(n);
    }
  }

 private:
  char buf_[512];
  std::size_t len_ = 0;
};

void forward(int sig, siginfo_t* info, void* ucontext) noexcept {
  const struct sigaction& prev = sig == SIGBUS ? g_prev_bus : g_prev_segv;
  if (prev.sa_handler == SIG_IGN && info->si_code <= 0) return;  // sent, and ignored before us
  if (prev.sa_handler == SIG_DFL || prev.sa_handler == SIG_IGN) {
    // A fault cannot be ignored: restore the default action; returning
    // re-executes the faulting instruction into it.
    struct sigaction dfl = {};
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    ::sigaction(sig, &dfl, nullptr);
    // A signal sent with kill() does not recur on return: send it again. It
    // stays blocked until this handler returns.
    if (info->si_code <= 0) ::raise(sig);
    return;
  }
  if ((prev.sa_flags & SA_SIGINFO) != 0) {
    prev.sa_sigaction(sig, info, ucontext);
  } else {
    prev.sa_handler(sig);
  }
}

void on_fault(int sig, siginfo_t* info, void* ucontext) {
  const int saved_errno = errno;
  // acquire; pairs with the release in install_overflow_handler().
  const OverflowDescriber describe = g_describer.load(std::memory_order_acquire);
  char who[256];
  who[0] = '\0';
  // si_code > 0: raised by the kernel for a fault, so si_addr is meaningful
  // (for a signal sent with kill() the same bytes hold the sender's pid and uid).
  if (describe != nullptr && info->si_code > 0 && describe(info->si_addr, who, sizeof who)) {
    who[sizeof who - 1] = '\0';
    SignalSafeText text;
    text.append("spindle: fiber stack overflow in ");
    text.append(who);
    text.append(" (guard page hit at ");
    text.append_hex(reinterpret_cast<std::uintptr_t>(info->si_addr));
    text.append(")\n");
    text.write_to(STDERR_FILENO);
    std::abort();
  }
  forward(sig, info, ucontext);
  errno = saved_errno;
}

void install_actions() {
  if (::sigaction(SIGSEGV, nullptr, &g_prev_segv) != 0 ||
      ::sigaction(SIGBUS, nullptr, &g_prev_bus) != 0) {
    throw std::system_error(errno, std::generic_category(), "spindle: sigaction query");
  }
  struct sigaction sa = {};
  sa.sa_sigaction = &on_fault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&sa.sa_mask);
  if (::sigaction(SIGSEGV, &sa, nullptr) != 0 || ::sigaction(SIGBUS, &sa, nullptr) != 0) {
    throw std::system_error(errno, std::generic_category(),
                            "spindle: installing the overflow handler");
  }
}

// The alternate signal stack this thread mapped, if any: [guard page | kAltStackSize].
// Thread-local; disabled and unmapped when the thread exits.
class AltStack {
 public:
  AltStack() = default;
  AltStack(const AltStack&) = delete;
  AltStack& operator=(const AltStack&) = delete;
  ~AltStack() {
    if (mapping_ == nullptr) return;
    stack_t current;
    if (::sigaltstack(nullptr, &current) == 0 && current.ss_sp == usable() &&
        (current.ss_flags & SS_ONSTACK) == 0) {
      stack_t off = {};
      off.ss_flags = SS_DISABLE;
      ::sigaltstack(&off, nullptr);
    }
    ::munmap(mapping_, mapping_size_);
  }

  void map_and_register() {
    if (mapping_ != nullptr) {  // ours, disabled since by someone else
      register_usable();
      return;
    }
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    const std::size_t size = page + kAltStackSize;
    void* mapping = ::mmap(nullptr, size, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (mapping == MAP_FAILED) {
      throw std::system_error(errno, std::generic_category(),
                              "spindle: mmap of an alternate signal stack");
    }
    // A guard is a safety net, not a requirement: ignore a kernel without either.
    if (::madvise(mapping, page, MADV_GUARD_INSTALL) != 0) ::mprotect(mapping, page, PROT_NONE);
    mapping_ = mapping;
    mapping_size_ = size;
    register_usable();
  }

 private:
  void register_usable() {
    stack_t ss = {};
    ss.ss_sp = usable();
    ss.ss_size = kAltStackSize;
    if (::sigaltstack(&ss, nullptr) != 0) {
      throw std::system_error(errno, std::generic_category(), "spindle: sigaltstack");
    }
  }
  void* usable() const noexcept {
    return static_cast<char*>(mapping_) + (mapping_size_ - kAltStackSize);
  }

  void* mapping_ = nullptr;
  std::size_t mapping_size_ = 0;
};

thread_local AltStack t_alt_stack;

}  // namespace

void install_overflow_handler(OverflowDescriber describe) {
  // release; pairs with the acquire in on_fault().
  g_describer.store(describe, std::memory_order_release);
  std::call_once(g_install_once, install_actions);
}

void ensure_signal_stack() {
  stack_t current;
  if (::sigaltstack(nullptr, &current) != 0) {
    throw std::system_error(errno, std::generic_category(), "spindle: sigaltstack query");
  }
  if ((current.ss_flags & SS_DISABLE) == 0) return;  // this thread already has one
  t_alt_stack.map_and_register();
}

}  // namespace spindle::fiber
