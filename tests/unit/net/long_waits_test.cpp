// Many long waits on one worker: operations that wait indefinitely (an idle
// connection's read, a read of a quiet pipe) hold kernel memory, never a slot
// that new work has to queue behind.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "fd_limit.hpp"
#include "net_test_support.hpp"

using namespace std::chrono_literals;
using spindle::errc;
namespace net = spindle::net;

namespace {

#if defined(SPINDLE_TSAN)
// TSan keeps per-fiber state far larger than a fiber: fewer waiters, still
// three times a ring's default size.
constexpr std::size_t kWaiters = 3'000;
#else
constexpr std::size_t kWaiters = 10'000;
#endif
constexpr std::size_t kClients = 200;

// A pipe held by one descriptor for both ends: a read-write open of the pipe
// through /proc. A read of it waits for data (the descriptor is a writer
// too, so there is no end of file), and 10,000 of them fit a hard limit of
// 20,000 descriptors.
int one_fd_pipe() {
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  const int fd = ::open(("/proc/self/fd/" + std::to_string(fds[0])).c_str(), O_RDWR | O_CLOEXEC);
  ::close(fds[0]);
  ::close(fds[1]);
  REQUIRE(fd >= 0);
  return fd;
}

// Connects `kClients` times to `port` from a plain thread, one connection
// after another, each sending a line and reading its echo (at most 5 s) while
// the earlier ones stay open; then closes them all. Returns how many were
// answered; stops at the first that is not.
std::size_t clients(std::uint16_t port) {
  std::vector<int> open;
  std::size_t answered = 0;
  for (std::size_t i = 0; i < kClients; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) break;
    open.push_back(fd);
    const timeval tv{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) break;
    const std::string line = "hello " + std::to_string(i) + "\n";
    if (::send(fd, line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size()))
      break;
    std::string back(line.size(), '\0');
    if (::recv(fd, back.data(), back.size(), MSG_WAITALL) != static_cast<ssize_t>(back.size()) ||
        back != line)
      break;
    ++answered;
  }
  for (int fd : open) ::close(fd);
  return answered;
}

}  // namespace

TEST_CASE("thousands of reads waiting on one worker do not hold up its accepts and reads",
          "[net][io]") {
  spindle::test::require_fd_limit(kWaiters + 2 * kClients + 64,
                                  "thousands of pipes and connections in one process");
  std::vector<int> pipes;
  for (std::size_t i = 0; i < kWaiters; ++i) pipes.push_back(one_fd_pipe());

  spindle::test::on_workers(
      [&] {
        std::atomic<std::size_t> started{0};
        std::vector<std::array<char, 8>> bufs(kWaiters);
        std::vector<spindle::JoinHandle<std::size_t>> readers;
        for (std::size_t i = 0; i < kWaiters; ++i) {
          readers.push_back(spindle::spawn([&, i] {
            ++started;
            return spindle::io::read(pipes[i], std::as_writable_bytes(std::span(bufs[i])), 0)
                .value();
          }));
        }
        // One worker: a reader that counted itself has parked in its read.
        while (started.load() != kWaiters) REQUIRE(spindle::this_fiber::yield());

        auto listener = net::TcpListener::bind(net::SocketAddress::loopback_v4()).value();
        const std::uint16_t port = listener.local_addr().value().port();
        auto acceptor = spindle::spawn([&] {
          for (;;) {
            auto conn = listener.accept();
            if (!conn) return;
            spindle::spawn([c = std::move(*conn)]() mutable {
              std::array<char, 64> buf;
              // Echo until the client closes: the connection then waits in a
              // read of its own, like the pipes.
              for (;;) {
                auto n = c.read(std::span<char>(buf));
                if (!n || *n == 0 || !c.write_all(std::string_view(buf.data(), *n))) return;
              }
            });
          }
        });
        auto client = spindle::spawn_blocking([port] { return clients(port); });
        CHECK(client.join().value() == kClients);

        for (std::size_t i = 0; i < kWaiters; ++i) {
          const std::string word = std::to_string(i);
          REQUIRE(::write(pipes[i], word.data(), word.size()) == static_cast<ssize_t>(word.size()));
        }
        std::size_t right = 0;
        for (std::size_t i = 0; i < kWaiters; ++i) {
          const std::string word = std::to_string(i);
          const std::size_t n = readers[i].join().value();
          if (n == word.size() && std::string(bufs[i].data(), n) == word) {
            ++right;
          }
        }
        CHECK(right == kWaiters);
        acceptor.abort();
        CHECK(acceptor.join().error() == errc::aborted);
      },
      {1});
  for (int fd : pipes) ::close(fd);
}
