#include "echo_client.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "measure.hpp"
#include "unique_fd.hpp"

namespace spindle::perf {
namespace {

using Clock = std::chrono::steady_clock;

// No echo on any connection for this long fails the run (a hung server).
constexpr int kStallMs = 5'000;

// Invariant: exactly one message is in flight: `out` was sent at `sent` and
// the first `got` bytes of its echo are in `in`.
struct Conn {
  UniqueFd fd;
  std::uint64_t seq = 0;  // messages sent on this connection, minus one
  std::size_t got = 0;
  Clock::time_point sent;
  std::array<unsigned char, kEchoMessage> out{};
  std::array<unsigned char, kEchoMessage> in{};
};

// Message `seq` of connection `index`: distinct for every (index, seq), so an
// echo from the wrong connection or of an old message does not match.
void compose(Conn& c, std::size_t index) {
  for (std::size_t k = 0; k < kEchoMessage / 8; ++k) {
    const std::uint64_t w = ((std::uint64_t{index} << 40) ^ c.seq) * 0x9e3779b97f4a7c15ULL + k;
    std::memcpy(c.out.data() + 8 * k, &w, 8);
  }
}

void send_next(Conn& c, std::size_t index, Clock::time_point now) {
  compose(c, index);
  c.got = 0;
  c.sent = now;
  // One message in flight never fills the socket buffer: a short send is a fault.
  const ssize_t n = ::send(c.fd.get(), c.out.data(), kEchoMessage, MSG_NOSIGNAL);
  if (n < 0) throw_errno("echo client: send");
  check(static_cast<std::size_t>(n) == kEchoMessage,
        "echo client: connection {}: short send ({} B)", index, n);
}

UniqueFd connect_to(const sockaddr_in& addr) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) throw_errno("echo client: socket");
  while (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    if (errno != EINTR) throw_errno("echo client: connect");
  }
  const int one = 1;
  // Zero linger: the close at the end resets, leaving no TIME_WAIT to use up
  // ephemeral ports across runs.
  const linger reset{1, 0};
  if (::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0 ||
      ::setsockopt(fd.get(), SOL_SOCKET, SO_LINGER, &reset, sizeof reset) != 0) {
    throw_errno("echo client: setsockopt");
  }
  const int flags = ::fcntl(fd.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd.get(), F_SETFL, flags | O_NONBLOCK) != 0) {
    throw_errno("echo client: fcntl");
  }
  return fd;
}

}  // namespace

EchoLoad run_echo_client(const EchoClientOptions& o) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(o.port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

  UniqueFd ep(::epoll_create1(EPOLL_CLOEXEC));
  if (!ep) throw_errno("echo client: epoll_create1");
  std::vector<Conn> conns(o.connections);
  for (std::size_t i = 0; i < conns.size(); ++i) {
    conns[i].fd = connect_to(addr);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = i;
    if (::epoll_ctl(ep.get(), EPOLL_CTL_ADD, conns[i].fd.get(), &ev) != 0) {
      throw_errno("echo client: epoll_ctl");
    }
  }

  EchoLoad load;
  std::vector<epoll_event> events(std::min<std::size_t>(conns.size(), 1024));
  // Waits for events; returns how many are ready.
  auto wait = [&] {
    for (;;) {
      const int ready =
          ::epoll_wait(ep.get(), events.data(), static_cast<int>(events.size()), kStallMs);
      if (ready < 0 && errno == EINTR) continue;
      if (ready < 0) throw_errno("echo client: epoll_wait");
      check(ready > 0, "echo client: no echo for {} ms on any of {} connections", kStallMs,
            conns.size());
      return static_cast<std::size_t>(ready);
    }
  };
  // Reads what event `e` announces; true once its connection's echo is whole.
  auto receive = [&](std::size_t e) {
    const std::size_t i = events[e].data.u64;
    Conn& c = conns[i];
    const ssize_t n = ::recv(c.fd.get(), c.in.data() + c.got, kEchoMessage - c.got, 0);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) return false;
      throw_errno("echo client: recv");
    }
    check(n > 0, "echo client: the server closed connection {}", i);
    c.got += static_cast<std::size_t>(n);
    if (c.got < kEchoMessage) return false;
    check(c.in == c.out, "echo client: connection {}: the echo of message {} differs from it", i,
          c.seq);
    return true;
  };

  // One echo on every connection, then all idle.
  Clock::time_point now = Clock::now();
  for (std::size_t i = 0; i < conns.size(); ++i) send_next(conns[i], i, now);
  for (std::size_t echoed = 0; echoed < conns.size();) {
    const std::size_t ready = wait();
    for (std::size_t e = 0; e < ready; ++e) echoed += receive(e) ? 1 : 0;
  }
  if (o.on_idle) o.on_idle();

  now = Clock::now();
  for (std::size_t i = 0; i < conns.size(); ++i) {
    ++conns[i].seq;
    send_next(conns[i], i, now);
  }
  const Clock::time_point warm_end = now + o.warmup;
  bool measuring = false;
  Clock::time_point start, end;
  double cpu_start = 0;
  for (;;) {
    const std::size_t ready = wait();
    for (std::size_t e = 0; e < ready; ++e) {
      if (!receive(e)) continue;
      Conn& c = conns[events[e].data.u64];
      now = Clock::now();
      if (measuring) {
        load.latency_us.push_back(std::chrono::duration<double, std::micro>(now - c.sent).count());
        ++load.requests;
      }
      ++c.seq;
      send_next(c, events[e].data.u64, now);
    }
    now = Clock::now();
    if (!measuring && now >= warm_end) {
      measuring = true;
      start = now;
      end = now + o.window;
      cpu_start = cpu_clock_seconds(o.server_cpu);
    } else if (measuring && now >= end) {
      load.server_cpu_s = cpu_clock_seconds(o.server_cpu) - cpu_start;
      load.seconds = std::chrono::duration<double>(now - start).count();
      return load;
    }
  }
}

}  // namespace spindle::perf
