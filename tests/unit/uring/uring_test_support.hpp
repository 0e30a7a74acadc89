// Helpers for the uring/ unit tests: pipes, ready-made operations, and a ring
// factory that skips (exit 77) when io_uring is unavailable on the machine.
#pragma once

#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <system_error>
#include <vector>

#include "skip.hpp"
#include "spindle/base/unique_fd.hpp"
#include "spindle/uring/operation.hpp"
#include "spindle/uring/ring.hpp"
#include "spindle/uring/wake_source.hpp"

namespace spindle::uring::test {

inline constexpr char kSentinel = '#';

// Builds a ring or skips the test when the kernel or sandbox refuses io_uring.
inline std::unique_ptr<Ring> make_ring(unsigned entries) {
  try {
    return std::make_unique<Ring>(RingOptions{.entries = entries});
  } catch (const std::system_error& e) {
    if (e.code().value() == EPERM || e.code().value() == ENOSYS) {
      SPINDLE_SKIP("io_uring is not available here: %s", e.what());
    }
    throw;
  }
}

// A WakeSource with an eventfd of its own, and the writes and drains a
// worker's eventfd gets.
class OwnedWakeSource {
 public:
  OwnedWakeSource() : fd_(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)), source_(fd_.get()) {
    if (!fd_) throw std::system_error(errno, std::system_category(), "eventfd");
  }
  void arm(Ring& ring) noexcept { source_.arm(ring); }
  bool armed() const noexcept { return source_.armed(); }
  void signal() noexcept { (void)::eventfd_write(fd_.get(), 1); }
  // consume(), draining the eventfd if the poll fired, as a worker does.
  bool consume() noexcept {
    if (!source_.consume()) return false;
    eventfd_t value = 0;
    (void)::eventfd_read(fd_.get(), &value);
    return true;
  }
  int fd() const noexcept { return fd_.get(); }

 private:
  UniqueFd fd_;
  WakeSource source_;
};

inline bool kernel_at_least(int major, int minor) {
  utsname u{};
  if (uname(&u) != 0) return false;
  int ma = 0;
  int mi = 0;
  if (std::sscanf(u.release, "%d.%d", &ma, &mi) != 2) return false;
  return ma > major || (ma == major && mi >= minor);
}

// A pipe, closed on destruction. The read end stays blocking: io_uring answers
// a read on an O_NONBLOCK file with -EAGAIN instead of waiting for data.
struct Pipe {
  int read_fd = -1;
  int write_fd = -1;
  Pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
      throw std::system_error(errno, std::system_category(), "pipe2");
    }
    read_fd = fds[0];
    write_fd = fds[1];
  }
  ~Pipe() {
    ::close(read_fd);
    ::close(write_fd);
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;

  void put(char c) const {
    if (::write(write_fd, &c, 1) != 1) throw std::system_error(errno, std::system_category());
  }
  // The next byte in the pipe, or -1 if it is empty (never blocks).
  int take() const {
    int available = 0;
    if (::ioctl(read_fd, FIONREAD, &available) != 0 || available == 0) return -1;
    char c = 0;
    return ::read(read_fd, &c, 1) == 1 ? static_cast<unsigned char>(c) : -1;
  }
};

// Base for test operations: counts on_complete calls and keeps the last result.
struct TestOp : Operation {
  TestOp(Prepare prepare, OnComplete on_complete) : Operation(prepare, on_complete) {}
  int calls = 0;
  int res = 1234567;
  std::uint32_t flags = 0;
};

struct NopOp : TestOp {
  NopOp() : TestOp(&NopOp::prep, &NopOp::done) {}
  static void prep(Operation*, io_uring_sqe* sqe) noexcept { io_uring_prep_nop(sqe); }
  static void done(Operation* self, int res, std::uint32_t flags) noexcept {
    auto* op = static_cast<NopOp*>(self);
    ++op->calls;
    op->res = res;
    op->flags = flags;
  }
};

// A one-byte read from `fd` into `buf` (which starts as kSentinel). `log`, if
// set, receives `id` on completion.
struct ReadOp : TestOp {
  explicit ReadOp(int read_fd, int op_id = 0, std::vector<int>* completion_log = nullptr)
      : TestOp(&ReadOp::prep, &ReadOp::done), fd(read_fd), id(op_id), log(completion_log) {}
  static void prep(Operation* self, io_uring_sqe* sqe) noexcept {
    auto* op = static_cast<ReadOp*>(self);
    io_uring_prep_read(sqe, op->fd, op->buf, 1, 0);
  }
  static void done(Operation* self, int res, std::uint32_t flags) noexcept {
    auto* op = static_cast<ReadOp*>(self);
    ++op->calls;
    op->res = res;
    op->flags = flags;
    if (op->log != nullptr) op->log->push_back(op->id);
  }
  int fd;
  int id;
  std::vector<int>* log;
  char buf[1] = {kSentinel};
};

// Calls ring.wait(step) until `done()` or `rounds` waits have passed; returns
// the CQEs handled.
template <typename Done>
std::size_t wait_until(Ring& ring, Done done, int rounds = 50,
                       std::chrono::milliseconds step = std::chrono::milliseconds(100)) {
  std::size_t handled = 0;
  for (int i = 0; i < rounds && !done(); ++i) handled += ring.wait(step);
  return handled;
}

}  // namespace spindle::uring::test
