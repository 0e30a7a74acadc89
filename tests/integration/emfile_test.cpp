// spindle-echo out of file descriptors: its RLIMIT_NOFILE is lowered (with
// prlimit(2), once it listens) to leave it a few free fds, and clients
// connect until accept fails with EMFILE. The server must log it, back off,
// keep serving the connections it has, and accept the waiting ones (and new
// ones) once connections close and fds free up.
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "process.hpp"
#include "skip.hpp"

using spindle::test::Client;
using spindle::test::count_of;
using spindle::test::Ms;
using spindle::test::Server;
using spindle::test::SteadyClock;

namespace {

const std::string kEcho = SPINDLE_ECHO_BIN;
const std::string kEmfile = "Too many open files";
// Connections the server can accept beyond what it had open when it started.
constexpr rlim_t kHeadroom = 8;

// The RLIMIT_NOFILE that leaves `pid` exactly `free` unused fd numbers (the
// limit bounds fd numbers, not the count: holes below it are usable, fds
// inherited above it stay open).
rlim_t limit_leaving(pid_t pid, rlim_t free) {
  std::set<rlim_t> open;
  for (const auto& e : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd"))
    open.insert(std::stoul(e.path().filename().string()));
  rlim_t n = 0;
  for (rlim_t unused = 0;; ++n) {
    if (open.count(n) == 0 && ++unused == free) return n + 1;
  }
}

// Running or sleeping: not exited, not a zombie.
bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] != 'Z' &&
         text[paren + 2] != 'X';
}

void set_recv_timeout(const Client& c, Ms timeout) {
  timeval tv{static_cast<time_t>(timeout.count() / 1000),
             static_cast<suseconds_t>(timeout.count() % 1000 * 1000)};
  ::setsockopt(c.fd(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

}  // namespace

TEST_CASE("spindle-echo out of fds logs EMFILE without a flood and serves again once fds free up",
          "[integration][echo][emfile]") {
#if defined(SPINDLE_ASAN)
  // Under ASan+UBSan the server aborts once no descriptor is free: UBSan's
  // vptr check probes memory through pipe(2), which then fails, so it reports
  // a false "invalid vptr" on std::error_category.
  SPINDLE_SKIP("needs a build without sanitizers: UBSan cannot run out of file descriptors");
#endif
  Server server(kEcho);
  const pid_t pid = server.process().pid();
  rlimit lim{};
  REQUIRE(::prlimit(pid, RLIMIT_NOFILE, nullptr, &lim) == 0);
  lim.rlim_cur = limit_leaving(pid, kHeadroom);
  REQUIRE(::prlimit(pid, RLIMIT_NOFILE, &lim, nullptr) == 0);

  // Connect until one is not served: each served connection echoes at once;
  // the first that does not must be waiting because accept failed (EMFILE).
  std::vector<std::unique_ptr<Client>> served;
  std::unique_ptr<Client> waiting;
  std::string waiting_msg;
  for (std::size_t i = 0; i < kHeadroom + 8 && !waiting; ++i) {
    auto c = std::make_unique<Client>(server.port());
    const std::string msg = "hello " + std::to_string(i);
    REQUIRE(c->send_all(msg));
    set_recv_timeout(*c, Ms(500));
    std::string got = c->recv_n(msg.size());
    if (got.empty() && server.process().wait_for_err_line(kEmfile, Ms(5'000))) {
      waiting = std::move(c);  // its message is still unanswered
      waiting_msg = msg;
      break;
    }
    if (got.size() < msg.size()) {  // no EMFILE: it was only slow
      set_recv_timeout(*c, Ms(10'000));
      got += c->recv_n(msg.size() - got.size());
    }
    REQUIRE(got == msg);
    served.push_back(std::move(c));
  }
  INFO(served.size() << " connections served before EMFILE; fd limit " << lim.rlim_cur);
  REQUIRE(waiting);
  REQUIRE(served.size() >= 1);
  CHECK(served.size() <= kHeadroom);

  const auto line = server.process().wait_for_err_line(kEmfile, Ms(0));
  REQUIRE(line);
  CHECK_THAT(*line, Catch::Contains("accept"));

  // The accept loop retries every 10 ms but reports at most once a second
  // (apps/common/accept_loop.hpp): no flood of lines.
  const std::size_t lines_before = count_of(server.process().err(), kEmfile);
  const auto t0 = SteadyClock::now();
  server.process().collect_for(Ms(1'000));
  const auto elapsed = std::chrono::duration_cast<Ms>(SteadyClock::now() - t0).count();
  const std::size_t lines = count_of(server.process().err(), kEmfile) - lines_before;
  INFO(lines << " EMFILE lines in " << elapsed << " ms");
  CHECK(lines <= static_cast<std::size_t>(elapsed / 1000 + 1));
  // Still out of fds: the waiting connection has no answer yet.
  CHECK(alive(pid));
  char byte;
  CHECK(::recv(waiting->fd(), &byte, 1, MSG_DONTWAIT) < 0);

  // A served connection still works while accept fails.
  REQUIRE(served.front()->send_all("still here"));
  CHECK(served.front()->recv_n(10) == "still here");

  // Close all but the first: their fds free up, and the waiting connection
  // and a fresh one are accepted and echoed.
  served.resize(1);
  set_recv_timeout(*waiting, Ms(10'000));
  CHECK(waiting->recv_n(waiting_msg.size()) == waiting_msg);
  Client fresh(server.port());
  REQUIRE(fresh.send_all("fresh"));
  CHECK(fresh.recv_n(5) == "fresh");
  REQUIRE(served.front()->send_all("and again"));
  CHECK(served.front()->recv_n(9) == "and again");

  CHECK(alive(pid));
  CHECK(server.stop(SIGTERM) == 0);
}
