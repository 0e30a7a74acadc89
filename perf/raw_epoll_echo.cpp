// The epoll echo rows' baseline: one thread, one epoll set, non-blocking
// sockets, no fibers, no runtime. The listener and every connection are in
// the set level-triggered for input; a readable connection gets one recv
// into its buffer and the send of what it brought; a send the socket cannot
// take whole waits for EPOLLOUT, the connection's input unwatched meanwhile.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <functional>
#include <memory>
#include <system_error>
#include <vector>

#include "echo.hpp"
#include "unique_fd.hpp"
#include "workloads.hpp"

namespace spindle::perf {
namespace {

constexpr int kMaxEvents = 256;

// Not thread-safe: one thread runs it.
class EpollEchoLoop {
 public:
  explicit EpollEchoLoop(UniqueFd listener)
      : epoll_(::epoll_create1(EPOLL_CLOEXEC)), listener_(std::move(listener)) {
    if (!epoll_) throw_errno("echo server: epoll_create1");
    watch(EPOLL_CTL_ADD, listener_.get(), EPOLLIN);
  }

  [[noreturn]] void run() {
    epoll_event events[kMaxEvents];
    for (;;) {
      const int n = ::epoll_wait(epoll_.get(), events, kMaxEvents, -1);
      if (n < 0 && errno != EINTR) throw_errno("echo server: epoll_wait");
      for (int i = 0; i < n; ++i) {
        const int fd = events[i].data.fd;
        if (fd == listener_.get()) {
          accept_all();
        } else if ((events[i].events & EPOLLOUT) != 0) {
          send_rest(fd);
        } else {
          receive(fd);
        }
      }
    }
  }

 private:
  void watch(int op, int fd, std::uint32_t events) {
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    if (::epoll_ctl(epoll_.get(), op, fd, &ev) != 0) throw_errno("echo server: epoll_ctl");
  }

  void accept_all() {
    for (;;) {
      const int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd < 0) {
        if (errno == EAGAIN || errno == ECONNABORTED || errno == EINTR) return;
        throw_errno("echo server: accept4");
      }
      const int one = 1;
      if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
        throw_errno("echo server: setsockopt");
      }
      if (static_cast<std::size_t>(fd) >= conns_.size()) conns_.resize(fd + 1);
      conns_[fd].buf = std::make_unique_for_overwrite<char[]>(kEchoBuffer);
      watch(EPOLL_CTL_ADD, fd, EPOLLIN);
    }
  }

  void receive(int fd) {
    EchoConn& c = conns_[fd];
    const ssize_t n = ::recv(fd, c.buf.get(), kEchoBuffer, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    // 0: the client closed; < 0: it reset (the end of a run).
    if (n <= 0) return close(fd);
    c.len = static_cast<unsigned>(n);
    c.sent = 0;
    if (!send_some(fd)) return;
    if (c.sent < c.len) watch(EPOLL_CTL_MOD, fd, EPOLLOUT);
  }

  void send_rest(int fd) {
    if (!send_some(fd)) return;
    if (conns_[fd].sent == conns_[fd].len) watch(EPOLL_CTL_MOD, fd, EPOLLIN);
  }

  // Sends what the socket takes; false if the connection closed.
  bool send_some(int fd) {
    EchoConn& c = conns_[fd];
    while (c.sent < c.len) {
      const ssize_t n = ::send(fd, c.buf.get() + c.sent, c.len - c.sent, MSG_NOSIGNAL);
      if (n < 0 && errno == EAGAIN) return true;
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        close(fd);
        return false;
      }
      c.sent += static_cast<unsigned>(n);
    }
    return true;
  }

  void close(int fd) {
    conns_[fd].buf.reset();
    ::close(fd);  // also leaves the epoll set
  }

  UniqueFd epoll_;
  UniqueFd listener_;
  std::vector<EchoConn> conns_;  // by fd
};

}  // namespace

Row raw_epoll_echo(const Params& p, std::size_t connections) {
  return measure_echo(p, connections, "raw-epoll",
                      [](const std::function<void(std::uint16_t)>& listening) {
                        std::uint16_t port = 0;
                        EpollEchoLoop loop(listen_loopback(port, SOCK_NONBLOCK));
                        listening(port);
                        loop.run();
                      });
}

}  // namespace spindle::perf
