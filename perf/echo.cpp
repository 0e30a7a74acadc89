#include "echo.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <system_error>

#include "echo_client.hpp"
#include "measure.hpp"
#include "programs.hpp"
#include "unique_fd.hpp"

namespace spindle::perf {
namespace {

// Descriptors beyond one per connection: listener, ring, epoll, stdio, pipes.
constexpr std::size_t kSpareFds = 64;
// The server must listen within this long of its start.
constexpr int kStartTimeoutMs = 10'000;

// Raises the soft RLIMIT_NOFILE to the hard one if it is below `need`. Forked
// processes inherit it, so one call covers the client and the server.
void raise_nofile(std::size_t need) {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) throw_errno("getrlimit(RLIMIT_NOFILE)");
  if (rl.rlim_cur >= need) return;
  check(rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need,
        "echo: {} descriptors needed, but the hard RLIMIT_NOFILE is {}; raise it (ulimit -Hn)",
        need, rl.rlim_max);
  rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ? need : rl.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &rl) != 0) throw_errno("setrlimit(RLIMIT_NOFILE)");
}

// The server's process side: never returns.
[[noreturn]] void server_main(pid_t parent, int ready_fd, const EchoServer& serve) {
  // Dies with the measurement's process even if that one is SIGKILLed (--timeout).
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(1);
  try {
    pin_to_cpu(kServerCpu);
    serve([ready_fd](std::uint16_t port) {
      if (::write(ready_fd, &port, sizeof port) != static_cast<ssize_t>(sizeof port)) {
        throw_errno("echo server: reporting the port");
      }
      ::close(ready_fd);
    });
    fmt::print(stderr, "spindle-perf: echo server: stopped serving\n");
  } catch (const std::exception& e) {
    fmt::print(stderr, "spindle-perf: echo server: {}\n", e.what());
  }
  std::fflush(stderr);
  ::_exit(1);
}

// An EchoServer in a forked process, pinned to CPU 0. Not thread-safe; make it
// from a single-threaded process.
// Invariant: pid_ > 0 until the server is reaped; the destructor kills and
// reaps it on every path.
class ServerProcess {
 public:
  explicit ServerProcess(const EchoServer& serve) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno("pipe2");
    UniqueFd ready_r(fds[0]), ready_w(fds[1]);
    const pid_t parent = ::getpid();
    std::fflush(stdout);
    std::fflush(stderr);
    pid_ = ::fork();
    if (pid_ < 0) throw_errno("fork");
    if (pid_ == 0) {
      ::close(fds[0]);
      server_main(parent, fds[1], serve);
    }
    ready_w.reset();
    try {
      const int err = ::clock_getcpuclockid(pid_, &cpu_clock_);
      if (err != 0) throw std::system_error(err, std::system_category(), "clock_getcpuclockid");
      port_ = wait_for_port(ready_r.get());
    } catch (...) {
      kill_and_reap();
      throw;
    }
  }
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;
  ~ServerProcess() { kill_and_reap(); }

  std::uint16_t port() const noexcept { return port_; }
  pid_t pid() const noexcept { return pid_; }
  // The server's CPU time, all its threads, utime + stime.
  clockid_t cpu_clock() const noexcept { return cpu_clock_; }

  // Fails if the server has ended on its own (it serves until killed); kills
  // and reaps it either way.
  void stop() {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw PerfError(fmt::format("echo server ended during the run: {}", describe_status(status)));
    }
    kill_and_reap();
  }

 private:
  std::uint16_t wait_for_port(int fd) {
    pollfd pfd{fd, POLLIN, 0};
    int ready;
    do {
      ready = ::poll(&pfd, 1, kStartTimeoutMs);
    } while (ready < 0 && errno == EINTR);
    if (ready < 0) throw_errno("poll");
    check(ready > 0, "echo server: not listening after {} ms", kStartTimeoutMs);
    std::uint16_t port = 0;
    const ssize_t n = ::read(fd, &port, sizeof port);
    if (n == static_cast<ssize_t>(sizeof port)) return port;
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    throw PerfError(fmt::format("echo server: {} before listening", describe_status(status)));
  }

  void kill_and_reap() noexcept {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }

  pid_t pid_ = -1;
  clockid_t cpu_clock_{};
  std::uint16_t port_ = 0;
};

}  // namespace

void pin_to_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (::sched_setaffinity(0, sizeof set, &set) != 0) {
    throw_errno(fmt::format("pinning to CPU {} (the server workloads need CPUs {} and {})", cpu,
                            kServerCpu, kClientCpu));
  }
}

UniqueFd listen_loopback(std::uint16_t& port, int socket_flags) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | socket_flags, 0));
  if (!fd) throw_errno("echo server: socket");
  const int one = 1;
  if (::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0) {
    throw_errno("echo server: setsockopt");
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(fd.get(), std::numeric_limits<int>::max()) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw_errno("echo server: bind/listen");
  }
  port = ntohs(addr.sin_port);
  return fd;
}

Row measure_echo(const Params& p, std::size_t connections, std::string_view impl,
                 const EchoServer& serve) {
  raise_nofile(connections + kSpareFds);
  ServerProcess server(serve);
  pin_to_cpu(kClientCpu);
  const std::uint64_t rss_listening = rss_bytes(server.pid());
  std::uint64_t rss_idle = 0;
  EchoLoad load = run_echo_client({.port = server.port(),
                                   .connections = connections,
                                   .warmup = std::chrono::milliseconds(p.sizes.echo_warmup_ms),
                                   .window = std::chrono::milliseconds(p.sizes.echo_window_ms),
                                   .server_cpu = server.cpu_clock(),
                                   .on_idle = [&] { rss_idle = rss_bytes(server.pid()); }});
  server.stop();
  check(load.requests > 0, "echo: no request completed in the window");

  Params one = p;
  one.workers = 1;
  Row r = make_row(fmt::format("echo_{}", connections), std::string(impl), one, load.requests,
                   {load.seconds, load.server_cpu_s}, "req/s");
  r.set("connections", static_cast<double>(connections));
  r.set("p50_us", percentile(load.latency_us, 0.50));
  r.set("p99_us", percentile(load.latency_us, 0.99));
  r.set("server_cpu_s_per_req", load.server_cpu_s / static_cast<double>(load.requests));
  // What a connection costs the server while it waits for its next request.
  r.set("idle_kib_per_conn", (static_cast<double>(rss_idle) - static_cast<double>(rss_listening)) /
                                 1024.0 / static_cast<double>(connections));
  return r;
}

}  // namespace spindle::perf
