// The echo workload's baseline: one thread, one ring (raw_ring.hpp), no
// fibers, no runtime. A connection is a buffer and one operation in flight:
// a RECV into the buffer, or the SEND of what that RECV brought (resent from
// where a short send stopped); a completed SEND posts the next RECV. Every
// CQE of a wait is handled before the next submit, so the SQEs they post go
// to the kernel in one io_uring_enter.

#include <arpa/inet.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <system_error>
#include <vector>

#include "echo.hpp"
#include "raw_ring.hpp"
#include "unique_fd.hpp"
#include "workloads.hpp"

namespace spindle::perf {
namespace {

enum Op : std::uint64_t { kAccept, kRecv, kSend };

// user_data: the fd and the operation. An fd names one connection at a time:
// it is closed only when its one operation has completed.
std::uint64_t tag(int fd, Op op) { return (static_cast<std::uint64_t>(fd) << 2) | op; }

// Not thread-safe: one thread runs it.
class EchoLoop {
 public:
  explicit EchoLoop(UniqueFd listener) : listener_(std::move(listener)) {}

  [[noreturn]] void run() {
    post_accept();
    for (;;) {
      ring_.submit_and_wait(1);
      unsigned head, seen = 0;
      io_uring_cqe* cqe;
      io_uring_for_each_cqe(ring_.get(), head, cqe) {
        handle(static_cast<int>(cqe->user_data >> 2), static_cast<Op>(cqe->user_data & 3),
               cqe->res);
        ++seen;
      }
      io_uring_cq_advance(ring_.get(), seen);
    }
  }

 private:
  void handle(int fd, Op op, int res) {
    switch (op) {
      case kAccept:
        if (res >= 0) {
          open(res);
        } else if (res != -ECONNABORTED && res != -EINTR) {
          throw std::system_error(-res, std::system_category(), "echo server: accept");
        }
        post_accept();
        return;
      case kRecv:
        // 0: the client closed; < 0: it reset (the end of a run).
        if (res <= 0) return close(fd);
        conns_[fd].len = static_cast<unsigned>(res);
        conns_[fd].sent = 0;
        return post_send(fd);
      case kSend:
        if (res < 0) return close(fd);
        conns_[fd].sent += static_cast<unsigned>(res);
        if (conns_[fd].sent < conns_[fd].len) return post_send(fd);
        return post_recv(fd);
    }
  }

  void open(int fd) {
    const int one = 1;
    if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
      throw_errno("echo server: setsockopt");
    }
    if (static_cast<std::size_t>(fd) >= conns_.size()) conns_.resize(fd + 1);
    conns_[fd].buf = std::make_unique_for_overwrite<char[]>(kEchoBuffer);
    post_recv(fd);
  }

  void close(int fd) {
    conns_[fd].buf.reset();
    ::close(fd);
  }

  void post_accept() {
    io_uring_sqe* sqe = ring_.sqe();
    io_uring_prep_accept(sqe, listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
    io_uring_sqe_set_data64(sqe, tag(listener_.get(), kAccept));
  }

  void post_recv(int fd) {
    io_uring_sqe* sqe = ring_.sqe();
    io_uring_prep_recv(sqe, fd, conns_[fd].buf.get(), kEchoBuffer, 0);
    io_uring_sqe_set_data64(sqe, tag(fd, kRecv));
  }

  void post_send(int fd) {
    const EchoConn& c = conns_[fd];
    io_uring_sqe* sqe = ring_.sqe();
    io_uring_prep_send(sqe, fd, c.buf.get() + c.sent, c.len - c.sent, MSG_NOSIGNAL);
    io_uring_sqe_set_data64(sqe, tag(fd, kSend));
  }

  RawRing ring_;
  UniqueFd listener_;
  std::vector<EchoConn> conns_;  // by fd
};

}  // namespace

Row raw_echo(const Params& p, std::size_t connections) {
  return measure_echo(p, connections, "raw-uring",
                      [](const std::function<void(std::uint16_t)>& listening) {
                        std::uint16_t port = 0;
                        EchoLoop loop(listen_loopback(port, 0));
                        listening(port);
                        loop.run();
                      });
}

}  // namespace spindle::perf
