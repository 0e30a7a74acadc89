// Child processes for the integration tests: the app under test and the real
// clients (curl, wrk), started with posix_spawn, their output captured
// through pipes, every wait bounded. Plain threads only (no runtime here).
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

extern char** environ;

namespace spindle::test {

using Ms = std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

// True if `name` is an executable file in a directory of $PATH.
inline bool have_program(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string_view rest = path ? path : "/usr/bin:/bin";
  while (!rest.empty()) {
    const auto colon = rest.find(':');
    const std::string dir(rest.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    if (!dir.empty() && ::access((dir + "/" + name).c_str(), X_OK) == 0) return true;
  }
  return false;
}

// A spawned process with its stdout and stderr on pipes (and stdin from
// `stdin_file`, or /dev/null). The destructor kills and reaps it if it still runs.
class Process {
 public:
  explicit Process(const std::vector<std::string>& argv,
                   const std::string& stdin_file = "/dev/null") {
    int out[2], err[2];
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
      throw std::runtime_error("pipe2 failed");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, stdin_file.c_str(), O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const int rc = ::posix_spawnp(&pid_, args[0], &fa, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    ::close(out[1]);
    ::close(err[1]);
    out_ = out[0];
    err_ = err[0];
    if (rc != 0) {
      pid_ = -1;
      throw std::runtime_error("posix_spawn " + argv[0] + ": " + std::strerror(rc));
    }
  }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  ~Process() {
    if (pid_ > 0 && !status_) {
      ::kill(pid_, SIGKILL);
      int st;
      ::waitpid(pid_, &st, 0);
    }
    ::close(out_);
    ::close(err_);
  }

  pid_t pid() const { return pid_; }
  void signal(int sig) const { ::kill(pid_, sig); }

  // Reads stdout until it holds a line containing `marker`; returns that
  // line, or nullopt at end of output or after `timeout`.
  std::optional<std::string> wait_for_line(std::string_view marker, Ms timeout) {
    return wait_for_line_in(out_text_, marker, timeout);
  }
  // The same on stderr.
  std::optional<std::string> wait_for_err_line(std::string_view marker, Ms timeout) {
    return wait_for_line_in(err_text_, marker, timeout);
  }

  // Collects output for `duration` (less if both pipes close), without waiting for exit.
  void collect_for(Ms duration) {
    const auto deadline = SteadyClock::now() + duration;
    while (pump(deadline)) {
    }
  }

  // Waits for exit, collecting its output; kills it after `timeout`.
  // Returns the exit code, or nullopt if it had to be killed or died by a signal.
  std::optional<int> wait(Ms timeout) {
    const auto deadline = SteadyClock::now() + timeout;
    while (pump(deadline)) {
    }
    if (!status_) {
      // Output closed (or deadline): reap, waiting at most until the deadline.
      for (;;) {
        int st;
        const pid_t r = ::waitpid(pid_, &st, WNOHANG);
        if (r == pid_) {
          status_ = st;
          break;
        }
        if (SteadyClock::now() >= deadline) {
          ::kill(pid_, SIGKILL);
          ::waitpid(pid_, &st, 0);
          status_ = st;
          killed_ = true;
          break;
        }
        std::this_thread::sleep_for(Ms(5));
      }
    }
    if (killed_ || !WIFEXITED(*status_)) return std::nullopt;
    return WEXITSTATUS(*status_);
  }

  const std::string& out() const { return out_text_; }
  const std::string& err() const { return err_text_; }

  // How the process ended, once wait() has returned: "exited with 1",
  // "killed by SIGSEGV", "killed after the timeout".
  std::string ending() const {
    if (!status_) return "still running";
    if (killed_) return "killed after the timeout";
    if (WIFSIGNALED(*status_)) {
      const char* name = ::sigabbrev_np(WTERMSIG(*status_));
      return std::string("killed by SIG") + (name ? name : "?");
    }
    return "exited with " + std::to_string(WEXITSTATUS(*status_));
  }

 private:
  std::optional<std::string> wait_for_line_in(const std::string& text, std::string_view marker,
                                              Ms timeout) {
    const auto deadline = SteadyClock::now() + timeout;
    for (;;) {
      for (std::size_t start = 0, nl; (nl = text.find('\n', start)) != std::string::npos;
           start = nl + 1) {
        const std::string line = text.substr(start, nl - start);
        if (line.find(marker) != std::string::npos) return line;
      }
      if (!pump(deadline)) return std::nullopt;
    }
  }

  // Moves whatever the pipes hold into out_text_/err_text_, waiting at most
  // until `deadline`. False once both pipes are closed or the deadline passed.
  bool pump(SteadyClock::time_point deadline) {
    for (;;) {
      pollfd fds[2] = {{out_open_ ? out_ : -1, POLLIN, 0}, {err_open_ ? err_ : -1, POLLIN, 0}};
      if (!out_open_ && !err_open_) return false;
      const auto left = std::chrono::duration_cast<Ms>(deadline - SteadyClock::now()).count();
      if (left <= 0) return false;
      const int n = ::poll(fds, 2, static_cast<int>(left));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      bool got = false;
      for (int i = 0; i < 2; ++i) {
        if (fds[i].revents == 0) continue;
        char buf[65536];
        const ssize_t r = ::read(fds[i].fd, buf, sizeof buf);
        if (r > 0) {
          (i == 0 ? out_text_ : err_text_).append(buf, static_cast<std::size_t>(r));
          got = true;
        } else {
          (i == 0 ? out_open_ : err_open_) = false;
        }
      }
      if (got) return true;
    }
  }

  pid_t pid_ = -1;
  int out_ = -1, err_ = -1;
  bool out_open_ = true, err_open_ = true;
  std::string out_text_, err_text_;
  std::optional<int> status_;
  bool killed_ = false;
};

struct Finished {
  std::optional<int> code;  // nullopt: killed after the timeout, or died by a signal
  std::string out, err;
};

// Runs a client program to completion (bounded by `timeout`).
inline Finished run_program(const std::vector<std::string>& argv, Ms timeout,
                            const std::string& stdin_file = "/dev/null") {
  Process p(argv, stdin_file);
  Finished f;
  f.code = p.wait(timeout);
  f.out = p.out();
  f.err = p.err();
  return f;
}

// A server from apps/ on 127.0.0.1 with a port of its choosing, started and
// waited for ("listening on 127.0.0.1:PORT" on its stdout); run through
// `launcher` (a program and its arguments that then runs the server), if
// one is given.
class Server {
 public:
  Server(const std::string& binary, std::vector<std::string> extra = {},
         std::vector<std::string> launcher = {})
      : process_(argv(binary, std::move(extra), std::move(launcher))) {
    auto line = process_.wait_for_line("listening on 127.0.0.1:", Ms(10'000));
    if (!line) {
      process_.wait(Ms(1000));
      throw std::runtime_error(binary + " did not start: " + process_.err());
    }
    const auto colon = line->rfind(':', line->find(' ', line->find("127.0.0.1:")));
    port_ = std::stoi(line->substr(colon + 1));
  }

  int port() const { return port_; }
  std::string url(std::string_view path = "/") const {
    return "http://127.0.0.1:" + std::to_string(port_) + std::string(path);
  }
  Process& process() { return process_; }

  // Sends `sig` and waits for the exit code (nullopt if killed after the
  // timeout or by a signal). Unless it is 0, the next assertion reports how
  // the server ended and what it wrote to stderr.
  std::optional<int> stop(int sig = SIGTERM, Ms timeout = Ms(15'000)) {
    process_.signal(sig);
    const auto code = process_.wait(timeout);
    if (code != 0) UNSCOPED_INFO("server " << process_.ending() << ", stderr:\n" << process_.err());
    return code;
  }

 private:
  static std::vector<std::string> argv(const std::string& binary, std::vector<std::string> extra,
                                       std::vector<std::string> launcher) {
    std::vector<std::string> a = std::move(launcher);
    a.insert(a.end(), {binary, "--listen", "127.0.0.1:0", "--workers", "2"});
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }

  Process process_;
  int port_ = 0;
};

// A blocking loopback TCP connection from the test thread, every call bounded
// by SO_RCVTIMEO/SO_SNDTIMEO. `source`, if nonzero, is the local IPv4 address
// (host byte order, a 127.x.y.z loopback one) to connect from; the port is
// still the kernel's choice.
class Client {
 public:
  explicit Client(int port, Ms timeout = Ms(10'000), in_addr_t source = 0) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    timeval tv{static_cast<time_t>(timeout.count() / 1000),
               static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (source != 0) {
      const int one = 1;
      ::setsockopt(fd_, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
      sockaddr_in local{};
      local.sin_family = AF_INET;
      local.sin_addr.s_addr = htonl(source);
      if (::bind(fd_, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
        const int err = errno;
        ::close(fd_);
        throw std::runtime_error(std::string("bind: ") + std::strerror(err));
      }
    }
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      const int err = errno;
      ::close(fd_);
      throw std::runtime_error(std::string("connect: ") + std::strerror(err));
    }
  }
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;
  ~Client() { ::close(fd_); }

  bool send_all(std::string_view s) {
    while (!s.empty()) {
      const ssize_t n = ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      s.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }
  // Reads until `n` bytes, end of stream, an error or the timeout.
  std::string recv_n(std::size_t n) {
    std::string s;
    char buf[65536];
    while (s.size() < n) {
      const ssize_t r = ::recv(fd_, buf, std::min(sizeof buf, n - s.size()), 0);
      if (r <= 0) break;
      s.append(buf, static_cast<std::size_t>(r));
    }
    return s;
  }
  // Reads until end of stream (or an error or the timeout); `eof` says which.
  std::string recv_all(bool* eof = nullptr) {
    std::string s;
    char buf[65536];
    for (;;) {
      const ssize_t r = ::recv(fd_, buf, sizeof buf, 0);
      if (r <= 0) {
        if (eof) *eof = r == 0;
        return s;
      }
      s.append(buf, static_cast<std::size_t>(r));
    }
  }
  // Reads until `marker` has been seen `count` times (or EOF/timeout).
  std::string recv_until(std::string_view marker, std::size_t count) {
    std::string s;
    char buf[65536];
    auto seen = [&] {
      std::size_t c = 0;
      for (std::size_t p = s.find(marker); p != std::string::npos; p = s.find(marker, p + 1)) ++c;
      return c;
    };
    while (seen() < count) {
      const ssize_t r = ::recv(fd_, buf, sizeof buf, 0);
      if (r <= 0) break;
      s.append(buf, static_cast<std::size_t>(r));
    }
    return s;
  }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

inline std::size_t count_of(std::string_view text, std::string_view needle) {
  std::size_t c = 0;
  for (std::size_t p = text.find(needle); p != std::string_view::npos; p = text.find(needle, p + 1))
    ++c;
  return c;
}

// What trickle() saw.
struct Trickle {
  int sent = 0;         // bytes sent before the peer closed
  bool closed = false;  // the peer ended the stream or reset it, or a send failed
  SteadyClock::duration took{};
};

// Sends `byte` on `fd` once every 100 ms, at most `max` times, and stops
// early once the peer has closed the connection (a slowloris client).
inline Trickle trickle(int fd, char byte, int max) {
  Trickle t;
  const auto began = SteadyClock::now();
  while (t.sent < max && !t.closed) {
    std::this_thread::sleep_for(Ms(100));
    char c;
    const ssize_t r = ::recv(fd, &c, 1, MSG_DONTWAIT);
    t.closed = r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK) ||
               ::send(fd, &byte, 1, MSG_NOSIGNAL) != 1;
    if (!t.closed) ++t.sent;
  }
  t.took = SteadyClock::now() - began;
  return t;
}

}  // namespace spindle::test
