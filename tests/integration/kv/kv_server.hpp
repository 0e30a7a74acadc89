// A spindle-kv child process for the integration tests, clients to talk to
// it (redis-cli through the shell, a raw blocking socket), and a temporary
// directory. Everything here runs on the test thread: no runtime involved.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "skip.hpp"
#include "temp_dir.hpp"

namespace kvtest {

inline bool have_program(const char* name) {
  const std::string cmd = std::string("command -v ") + name + " >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

inline void require_redis_cli() {
  if (!have_program("redis-cli")) SPINDLE_SKIP("redis-cli is not installed (Debian: redis-tools)");
}

using spindle::test::TempDir;

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// One spindle-kv process on 127.0.0.1 and a free port (it binds port 0 and
// prints the address it got).
class Server {
 public:
  Server(const std::filesystem::path& dir, std::vector<std::string> extra = {}) : dir_(dir) {
    start(std::move(extra));
  }
  ~Server() {
    if (pid_ > 0) kill(SIGKILL);
  }
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  // Everything the server wrote to stderr so far.
  std::string log() const { return slurp(stderr_path_); }

  // SIGTERM (a clean stop: the log is written and synced) or SIGKILL: the
  // wait status. Unless a SIGTERM ends in exit code 0, the next assertion
  // reports the server's stderr.
  int stop() {
    const int status = kill(SIGTERM);
    if (status != 0) UNSCOPED_INFO("server wait status " << status << ", stderr:\n" << log());
    return status;
  }
  int kill(int sig) {
    REQUIRE(pid_ > 0);
    ::kill(pid_, sig);
    int status = 0;
    REQUIRE(::waitpid(pid_, &status, 0) == pid_);
    pid_ = -1;
    return status;
  }

 private:
  void start(std::vector<std::string> extra) {
    stderr_path_ = dir_.string() + ".stderr";
    std::vector<std::string> args = {
        SPINDLE_KV_BIN, "--listen", "127.0.0.1:0", "--dir", dir_.string(), "--workers", "2"};
    for (auto& e : extra) args.push_back(std::move(e));
    int out[2];
    REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
    pid_ = ::fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      ::dup2(out[1], 1);
      const int err = ::open(stderr_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(err, 2);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      std::_Exit(127);
    }
    ::close(out[1]);
    // "spindle-kv: listening on 127.0.0.1:PORT (...)"
    std::string line;
    char c;
    pollfd p{out[0], POLLIN, 0};
    while (line.find('\n') == std::string::npos) {
      if (::poll(&p, 1, 20'000) != 1 || ::read(out[0], &c, 1) != 1) break;
      line += c;
    }
    ::close(out[0]);
    INFO("server stdout: " << line << "\nserver stderr: " << log());
    const auto at = line.find("127.0.0.1:");
    REQUIRE(at != std::string::npos);
    port_ = std::stoi(line.substr(at + 10));
  }

  std::filesystem::path dir_;
  std::string stderr_path_;
  pid_t pid_ = -1;
  int port_ = 0;
};

// Runs a shell command; its stdout.
inline std::string shell(const std::string& cmd, int* status = nullptr) {
  std::string out;
  FILE* f = ::popen(cmd.c_str(), "r");
  REQUIRE(f != nullptr);
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  const int st = ::pclose(f);
  if (status) *status = st;
  return out;
}

inline std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') {
      q += "'\\''";
    } else {
      q += c;
    }
  }
  return q + "'";
}

// redis-cli -p PORT args...: its output without the trailing newline.
inline std::string cli(const Server& s, const std::vector<std::string>& args) {
  std::string cmd = "redis-cli -p " + std::to_string(s.port());
  for (const auto& a : args) cmd += " " + quote(a);
  std::string out = shell(cmd + " 2>&1");
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// A plain blocking TCP client.
class Client {
 public:
  explicit Client(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    timeval tv{10, 0};  // a hang guard
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  }
  ~Client() { ::close(fd_); }

  void send(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      REQUIRE(n > 0);
      data.remove_prefix(static_cast<std::size_t>(n));
    }
  }
  // Reads until `n` bytes arrived or the peer closed.
  std::string recv_exactly(std::size_t n) {
    std::string out;
    char buf[65536];
    while (out.size() < n) {
      const ssize_t got = ::recv(fd_, buf, std::min(sizeof buf, n - out.size()), 0);
      if (got <= 0) break;
      out.append(buf, static_cast<std::size_t>(got));
    }
    return out;
  }
  // Reads everything until the peer closes (or 10 s pass).
  std::string recv_all() {
    std::string out;
    char buf[65536];
    for (;;) {
      const ssize_t got = ::recv(fd_, buf, sizeof buf, 0);
      if (got <= 0) break;
      out.append(buf, static_cast<std::size_t>(got));
    }
    return out;
  }
  int fd() const { return fd_; }
  // True if the peer has closed (a read returns 0 within 10 s).
  bool closed_by_peer() {
    char c;
    return ::recv(fd_, &c, 1, 0) == 0;
  }

 private:
  int fd_ = -1;
};

inline std::string resp(const std::vector<std::string>& args) {
  std::string s = "*" + std::to_string(args.size()) + "\r\n";
  for (const auto& a : args) s += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
  return s;
}

}  // namespace kvtest
