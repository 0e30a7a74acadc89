// The programs in examples/ as a user runs them: separate processes, driven
// over loopback sockets and a temporary storage directory, every wait bounded.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "process.hpp"
#include "spindle/storage/crc32c.hpp"
#include "spindle/storage/header.hpp"
#include "spindle/storage/partition.hpp"
#include "temp_dir.hpp"

using spindle::test::Client;
using spindle::test::Ms;
using spindle::test::run_program;
using spindle::test::Server;
using spindle::test::TempDir;

namespace {

const std::string kHello = SPINDLE_EXAMPLE_HELLO_BIN;
const std::string kChat = SPINDLE_EXAMPLE_CHAT_BIN;
const std::string kChecksum = SPINDLE_EXAMPLE_CHECKSUM_BIN;
const std::string kFanout = SPINDLE_EXAMPLE_FANOUT_BIN;
const std::string kGather = SPINDLE_EXAMPLE_GATHER_BIN;

// A listening socket on 127.0.0.1 with a port of the kernel's choosing.
class Listener {
 public:
  Listener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, 16) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0)
      throw std::runtime_error("cannot listen on 127.0.0.1");
    port_ = ntohs(a.sin_port);
  }
  Listener(const Listener&) = delete;
  Listener& operator=(const Listener&) = delete;
  ~Listener() { close(); }

  int port() const { return port_; }
  std::string target() const { return "127.0.0.1:" + std::to_string(port_); }
  // The next connection, or -1 after `timeout`.
  int accept(Ms timeout) const {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1) return -1;
    return ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
  }
  void close() {
    if (fd_ >= 0) ::close(std::exchange(fd_, -1));
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// Echoes the lines of one connection to `listener` back to their sender,
// until the peer closes or nothing arrives for 10 s.
void echo_one(const Listener& listener) {
  const int fd = listener.accept(Ms(10'000));
  if (fd < 0) return;
  char buf[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 10'000) != 1) break;
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0 || ::send(fd, buf, static_cast<std::size_t>(n), MSG_NOSIGNAL) != n) break;
  }
  ::close(fd);
}

// The "<name> <crc>" lines of spindle-example-checksum's output.
std::map<std::string, std::string> checksums(const std::string& out) {
  std::map<std::string, std::string> sums;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string name, crc, extra;
    if (words >> name >> crc && !(words >> extra) && name != "total:") sums[name] = crc;
  }
  return sums;
}

}  // namespace

TEST_CASE("spindle-example-hello joins every fiber it spawned", "[integration][examples]") {
  const auto run = run_program({kHello, "--fibers", "5", "--workers", "2"}, Ms(10'000));
  REQUIRE(run.code == 0);
  for (int i = 0; i < 5; ++i)
    CHECK_THAT(run.out, Catch::Contains("hello from fiber " + std::to_string(i) + " "));
  CHECK(spindle::test::count_of(run.out, "hello from fiber") == 5);
  CHECK_THAT(run.out, Catch::Contains("joined 5 fibers on 2 workers"));
}

TEST_CASE("spindle-example-chat sends a line to the other clients only",
          "[integration][examples]") {
  Server server(kChat);
  Client a(server.port());
  // The welcome comes from the broadcaster: once read, the client is a member.
  REQUIRE_THAT(a.recv_until("\n", 1), Catch::Contains("* welcome"));
  Client b(server.port());
  REQUIRE_THAT(b.recv_until("\n", 1), Catch::Contains("2 online"));

  REQUIRE(a.send_all("hello from a\n"));
  CHECK_THAT(b.recv_until("hello from a\n", 1), Catch::Contains(": hello from a\n"));
  // The broadcaster handles lines in order: had a's line come back to a, it
  // would arrive before b's.
  REQUIRE(b.send_all("hello from b\r\n"));
  const std::string at_a = a.recv_until("hello from b\n", 1);
  CHECK_THAT(at_a, Catch::Contains(": hello from b\n"));
  CHECK_THAT(at_a, !Catch::Contains("hello from a"));

  CHECK(server.stop(SIGTERM) == 0);
  CHECK_THAT(server.process().out(), Catch::Contains("SIGTERM, stopping"));
}

TEST_CASE("spindle-example-chat disconnects a client that does not read",
          "[integration][examples]") {
  Server server(kChat);
  Client talker(server.port());
  REQUIRE_THAT(talker.recv_until("\n", 1), Catch::Contains("* welcome"));
  Client stalled(server.port());
  const int small = 4096;
  ::setsockopt(stalled.fd(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  REQUIRE_THAT(stalled.recv_until("\n", 1), Catch::Contains("2 online"));
  REQUIRE_THAT(talker.recv_until("\n", 1), Catch::Contains("joined"));

  // Far more than the socket buffers hold: the stalled client's outbox fills.
  const std::string line = std::string(999, 'x') + "\n";
  for (int i = 0; i < 20'000; ++i) REQUIRE(talker.send_all(line));
  REQUIRE(server.process().wait_for_line("too slow", Ms(10'000)));

  // The server still serves: a newcomer sees the talker and itself only. One
  // that joins while the broadcaster is still working through the flood can
  // be dropped as too slow itself (its outbox fills faster than any socket
  // drains), before its welcome line is out: then another one tries, for up
  // to 10 s.
  std::string welcome;
  const auto until = std::chrono::steady_clock::now() + Ms(10'000);
  while (welcome.find('\n') == std::string::npos && std::chrono::steady_clock::now() < until) {
    Client newcomer(server.port());
    welcome = newcomer.recv_until("\n", 1);
    if (welcome.find('\n') == std::string::npos) std::this_thread::sleep_for(Ms(50));
  }
  CHECK_THAT(welcome, Catch::Contains("2 online"));
  CHECK(server.stop(SIGINT) == 0);
}

TEST_CASE("spindle-example-checksum creates blobs and checksums them again",
          "[integration][examples]") {
  TempDir dir;
  const std::vector<std::string> args{kChecksum, "--dir", dir.path().string(), "--partition", "p"};
  auto create_args = args;
  create_args.insert(create_args.end(), {"--create", "5", "--size", "100000"});
  const auto first = run_program(create_args, Ms(30'000));
  REQUIRE(first.code == 0);
  const auto created = checksums(first.out);
  REQUIRE(created.size() == 5);
  CHECK_THAT(first.out, Catch::Contains("total: 5 blobs, 500000 bytes"));

  const auto second = run_program(args, Ms(30'000));
  REQUIRE(second.code == 0);
  CHECK(checksums(second.out) == created);

  // Each blob's data follows its header in <dir>/<partition>/<hex name>.
  for (const auto& [name, crc] : created) {
    std::ifstream file(dir.path() / "p" / spindle::storage::blob_file_name(name), std::ios::binary);
    const std::string bytes{std::istreambuf_iterator<char>(file), {}};
    REQUIRE(bytes.size() == spindle::storage::kHeaderSize + 100000);
    const auto data = std::string_view(bytes).substr(spindle::storage::kHeaderSize);
    char hex[9];
    std::snprintf(hex, sizeof hex, "%08x", spindle::storage::crc32c(data));
    CHECK(crc == hex);
  }
}

TEST_CASE("spindle-example-fanout reports an answer and a timeout and a refusal",
          "[integration][examples]") {
  Listener answering;
  Listener silent;  // accepted by the kernel, never read from
  Listener closed;
  const std::string refused_target = closed.target();
  closed.close();

  std::string request;
  std::thread server([&] {
    const int fd = answering.accept(Ms(10'000));
    if (fd < 0) return;
    char buf[4096];
    while (request.find("\r\n\r\n") == std::string::npos) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 10'000) != 1) break;
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      request.append(buf, static_cast<std::size_t>(n));
    }
    const std::string reply = "HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello";
    (void)::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
    ::close(fd);
  });

  // Killed (and so failed) if it overruns its 300 ms timeout by far.
  const auto run = run_program(
      {kFanout, "--timeout-ms", "300", answering.target(), silent.target(), refused_target},
      Ms(5'000));
  server.join();
  CHECK(run.code == 1);  // not every target answered
  CHECK(request.starts_with("GET / HTTP/1.1\r\n"));
  CHECK_THAT(request, Catch::Contains("Connection: close\r\n"));
  CHECK_THAT(run.out, Catch::Contains(answering.target() + ": HTTP/1.0 200 OK, 5 bytes\n"));
  CHECK_THAT(run.out, Catch::Contains(silent.target() + ": timed out\n"));
  CHECK_THAT(run.out, Catch::Contains(refused_target + ": Connection refused\n"));
}

TEST_CASE("spindle-example-gather gathers the echo of every backend", "[integration][examples]") {
  Listener a, b;
  std::thread echo_a([&] { echo_one(a); });
  std::thread echo_b([&] { echo_one(b); });
  const auto run =
      run_program({kGather, "--message", "hi there", a.target(), b.target()}, Ms(10'000));
  echo_a.join();
  echo_b.join();
  CHECK(run.code == 0);
  CHECK_THAT(run.out, Catch::Contains(a.target() + ": echoed in "));
  CHECK_THAT(run.out, Catch::Contains(b.target() + ": echoed in "));
  CHECK_THAT(run.out, Catch::Contains("2 backends in "));
}

TEST_CASE("spindle-example-gather gives up at the first failure, or at its deadline",
          "[integration][examples]") {
  Listener silent;  // accepted by the kernel, never read from
  Listener closed;
  const std::string refused_target = closed.target();
  closed.close();
  // A refusal aborts the wait for the silent backend: the run ends long
  // before its 60 s deadline (it is killed, and fails, after 10 s).
  const auto refused =
      run_program({kGather, "--timeout-ms", "60000", silent.target(), refused_target}, Ms(10'000));
  CHECK(refused.code == 1);
  CHECK_THAT(refused.out, Catch::Contains(refused_target + ": connect: Connection refused\n"));

  Listener answering;
  std::thread echo([&] { echo_one(answering); });
  const auto late = run_program(
      {kGather, "--timeout-ms", "300", answering.target(), silent.target()}, Ms(10'000));
  echo.join();
  CHECK(late.code == 1);
  CHECK_THAT(late.out, Catch::Contains("no answer from every backend in 300 ms"));
}
