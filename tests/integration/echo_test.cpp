// spindle-echo as a user runs it: a separate process on 127.0.0.1, real
// sockets from this process, stopped with signals.
#include <catch2/catch.hpp>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "many_connections.hpp"
#include "process.hpp"

using spindle::test::Client;
using spindle::test::Ms;
using spindle::test::Server;

namespace {
const std::string kEcho = SPINDLE_ECHO_BIN;
}  // namespace

TEST_CASE("spindle-echo echoes for concurrent clients", "[integration][echo]") {
  Server server(kEcho);
  std::vector<std::thread> clients;
  std::vector<int> ok(16, 0);
  for (std::size_t c = 0; c < ok.size(); ++c) {
    clients.emplace_back([&, c] {
      Client client(server.port());
      for (int i = 0; i < 200; ++i) {
        const std::string msg = "client " + std::to_string(c) + " message " + std::to_string(i);
        if (!client.send_all(msg) || client.recv_n(msg.size()) != msg) return;
        ++ok[c];
      }
    });
  }
  for (auto& t : clients) t.join();
  for (int n : ok) CHECK(n == 200);
  CHECK(server.stop(SIGINT) == 0);
}

TEST_CASE("spindle-echo stops on SIGTERM after echoing what it received", "[integration][echo]") {
  Server server(kEcho);
  // Both connections are served before the signal (one still waiting in the
  // listen backlog would be reset when the listener closes).
  Client idle(server.port());  // an idle connection must not hold up the stop
  Client busy(server.port());
  for (Client* c : {&idle, &busy}) {
    REQUIRE(c->send_all("ready"));
    REQUIRE(c->recv_n(5) == "ready");
  }
  // More than the socket buffers hold: part of it is still on its way when
  // the signal comes. The server echoes what it has received and closes.
  std::string big(1 << 20, '\0');
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 23);
  REQUIRE(busy.send_all(big));
  server.process().signal(SIGTERM);
  const std::string back = busy.recv_all();
  CHECK(back.size() <= big.size());
  CHECK(back == big.substr(0, back.size()));  // an exact prefix: nothing lost in between
  bool eof = false;
  CHECK(idle.recv_all(&eof).empty());
  CHECK(eof);
  CHECK(server.process().wait(Ms(15'000)) == 0);
  CHECK_THAT(server.process().out(), Catch::Contains("SIGTERM, stopping"));
}

TEST_CASE("spindle-echo exits non-zero with a clear message when the port is taken",
          "[integration][echo]") {
  Server first(kEcho);
  const auto second = spindle::test::run_program(
      {kEcho, "--listen", "127.0.0.1:" + std::to_string(first.port())}, Ms(10'000));
  REQUIRE(second.code.has_value());
  CHECK(*second.code != 0);
  CHECK_THAT(second.err,
             Catch::Contains("cannot listen on 127.0.0.1:" + std::to_string(first.port())));
  CHECK_THAT(second.err, Catch::Contains("in use"));
  const auto bad = spindle::test::run_program({kEcho, "--listen", "1.2.3:80"}, Ms(10'000));
  CHECK(bad.code == 1);
  CHECK_THAT(bad.err, Catch::Contains("not an IPv4 address"));
  CHECK(first.stop() == 0);
}

TEST_CASE("spindle-echo prints a fiber dump on SIGUSR1 and keeps serving", "[integration][echo]") {
  Server server(kEcho);
  Client client(server.port());
  REQUIRE(client.send_all("before"));
  REQUIRE(client.recv_n(6) == "before");
  server.process().signal(SIGUSR1);
  // The connection is still served after the dump.
  REQUIRE(client.send_all("after"));
  CHECK(client.recv_n(5) == "after");
  CHECK(server.stop(SIGTERM) == 0);
  const std::string err = server.process().err();
  INFO(err);
  CHECK_THAT(err, Catch::Contains("live tasks"));
  CHECK_THAT(err, Catch::Contains("'root': running (this dump)"));
  CHECK_THAT(err, Catch::Contains("parked (io accept)"));
}

TEST_CASE("spindle-echo closes connections beyond --max-connections and serves again after",
          "[integration][echo]") {
  Server server(kEcho, {"--max-connections", "2"});
  std::vector<std::unique_ptr<Client>> open;
  for (int i = 0; i < 2; ++i) {
    open.push_back(std::make_unique<Client>(server.port()));
    REQUIRE(open.back()->send_all("hello"));
    REQUIRE(open.back()->recv_n(5) == "hello");
  }
  {
    // Accepted and closed at once: end of stream. (It sends nothing: unread
    // data at the close would turn the FIN into a reset.)
    Client third(server.port());
    bool eof = false;
    CHECK(third.recv_all(&eof).empty());
    CHECK(eof);
  }
  open.pop_back();  // frees a slot once the server sees the close
  bool served = false;
  for (int attempt = 0; attempt < 50 && !served; ++attempt) {
    Client next(server.port());
    served = next.send_all("again") && next.recv_n(5) == "again";
    if (!served) std::this_thread::sleep_for(Ms(20));
  }
  CHECK(served);
  REQUIRE(open.front()->send_all("still"));
  CHECK(open.front()->recv_n(5) == "still");
  CHECK(server.stop(SIGTERM) == 0);
  INFO(server.process().err());
  CHECK_THAT(server.process().err(),
             Catch::Contains("refused 1 connection: 2 open, as many as --max-connections allows"));
}

TEST_CASE("spindle-echo holds 15,000 concurrent connections, each answered as it opens and again",
          "[integration][echo][scale]") {
  using spindle::test::kManyConnections;
  spindle::test::require_fds_for_connections(kManyConnections);
  Server server(kEcho);
  const auto r =
      spindle::test::open_many(server.port(), kManyConnections, [](Client& c, std::size_t i) {
        const std::string msg = "connection " + std::to_string(i) + "\n";
        return c.send_all(msg) && c.recv_n(msg.size()) == msg;
      });
  spindle::test::check_many_connections(r, kManyConnections);
  // The stop ends 15,000 fibers: seconds under the sanitizers.
  const auto code = server.stop(SIGTERM, Ms(60'000));
  INFO(server.process().err());
  CHECK(code == 0);
  CHECK_THAT(server.process().err(), !Catch::Contains("refused"));
}
