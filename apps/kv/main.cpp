// spindle-kv: a Redis-protocol (RESP2) key-value server on spindle, durable
// through a log in storage/ with group commit.
//
//   spindle-kv --listen 127.0.0.1:6380 --dir PATH --workers N --fsync always|everysec|no
//              [--commit-window USEC]
//
// SIGINT or SIGTERM: stop accepting, write and sync the log, exit 0. SIGUSR1:
// a fiber dump on stderr.
#include <fmt/format.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <spindle/spindle.hpp>
#include <string>

#include "accept_loop.hpp"
#include "commands.hpp"
#include "db.hpp"
#include "fd_limit.hpp"
#include "log.hpp"
#include "resp.hpp"
#include "serve.hpp"
#include "server.hpp"
#include "stop_signal.hpp"

int main(int argc, char** argv) {
  CLI::App app{"spindle-kv: a durable Redis-protocol key-value server on spindle"};
  std::string listen = "127.0.0.1:6380";
  std::string dir = "spindle-kv-data";
  std::size_t workers = 2;
  std::string fsync = "always";
  bool compact = false;
  kv::Limits limits;
  app.add_option("--listen", listen, "address:port to listen on (port 0: any free port)")
      ->capture_default_str();
  app.add_option("--dir", dir, "storage directory")->capture_default_str();
  app.add_option("--workers", workers, "worker threads (1..64)")->capture_default_str();
  app.add_option("--fsync", fsync,
                 "always: sync before every reply (group commit); everysec: once a second; no: "
                 "leave it to the kernel")
      ->check(CLI::IsMember({"always", "everysec", "no"}))
      ->capture_default_str();
  unsigned window_us = 200;
  app.add_option("--commit-window", window_us,
                 "microseconds a write may wait for other clients' changes to join it, after "
                 "one that covered several clients (0: none)")
      ->check(CLI::Range(0u, 1'000'000u))
      ->capture_default_str();
  app.add_flag("--compact", compact, "rewrite the log as one record per live key at start-up");
  app.add_option("--max-bulk-len", limits.max_bulk, "largest argument in bytes")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 30))
      ->capture_default_str();
  app.add_option("--max-array-len", limits.max_array, "most arguments in one command")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 24))
      ->capture_default_str();
  std::size_t max_connections = 0;
  app.add_option("--max-connections", max_connections,
                 "connections open at once (0: as many as the descriptor limit, raised to its "
                 "hard value, leaves room for); one more is accepted and closed at once")
      ->check(CLI::Range(std::size_t{0}, std::size_t{10'000'000}))
      ->capture_default_str();
  double idle_s = 0;
  app.add_option("--idle-timeout", idle_s,
                 "seconds a connection may stay silent between commands (0: for ever)")
      ->check(CLI::Range(0.0, 86400.0 * 365))
      ->capture_default_str();
  double command_s = 30;
  app.add_option("--command-timeout", command_s,
                 "seconds from a command's first byte to its last (0: no limit)")
      ->check(CLI::Range(0.0, 86400.0 * 365))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  const kv::Timeouts timeouts{.idle = spindle::apps::seconds(idle_s),
                              .command = spindle::apps::seconds(command_s)};

  const kv::FsyncPolicy policy = fsync == "always"     ? kv::FsyncPolicy::kAlways
                                 : fsync == "everysec" ? kv::FsyncPolicy::kEverysec
                                                       : kv::FsyncPolicy::kNo;
  auto addr = spindle::net::SocketAddress::parse(listen);
  if (!addr) {
    fmt::print(stderr, "spindle-kv: --listen: {}\n", addr.error());
    return 2;
  }

  // What the fibers share lives here, outside the runtime: it must outlast
  // every fiber, and the runtime ends the others only after the root returns.
  kv::Db db;
  std::unique_ptr<kv::Log> log;
  std::optional<kv::Commands> commands;
  spindle::apps::ConnectionLimit limit(
      spindle::apps::connection_limit("spindle-kv", max_connections, workers));
  try {
    spindle::apps::StopSignal stop;  // before the runtime starts any thread
    spindle::Config config{.workers = workers};
    // Close with FIN, not RST, so that a client reads our last reply (an
    // error before we hang up, say).
    config.zero_linger = false;
    spindle::Runtime rt(config);
    return rt.run([&]() -> int {
      auto storage = spindle::storage::Storage::open_directory(dir);
      if (!storage) {
        fmt::print(stderr, "spindle-kv: storage directory {}: {}\n", dir,
                   storage.error().message());
        return 1;
      }
      auto opened = kv::Log::open(*storage, policy, db, compact);
      if (!opened) {
        fmt::print(stderr, "spindle-kv: log in {}: {}\n", dir, opened.error().message());
        return 1;
      }
      log = std::move(*opened);
      commands.emplace(db, *log, policy);
      log->start(std::chrono::microseconds(window_us));

      auto listener = spindle::net::TcpListener::bind(*addr);
      if (!listener) {
        fmt::print(stderr, "spindle-kv: listen on {}: {}\n", listen, listener.error().message());
        return 1;
      }
      const auto bound = listener->local_addr();
      std::size_t keys;
      {
        std::lock_guard<spindle::Mutex> lock(db.mutex());
        keys = db.size();
      }
      fmt::print(
          "spindle-kv: listening on {} (dir {}, fsync {}, {} workers, {} keys, log.{}, up to {} "
          "connections)\n",
          bound ? bound->to_string() : listen, dir, fsync, workers, keys, log->generation(),
          limit.max());
      std::fflush(stdout);

      // Connections are the acceptor's children: aborting it ends them all.
      auto acceptor = spindle::spawn("kv-acceptor", [&] {
        spindle::apps::accept_loop(
            "spindle-kv", *listener, limit,
            [&](spindle::net::TcpStream stream, spindle::apps::ConnectionLimit::Slot slot) {
              spindle::spawn([&, stream = std::move(stream), slot = std::move(slot)]() mutable {
                kv::serve(std::move(stream), *commands, *log, limits, timeouts);
              }).detach();
            });
      });
      auto expirer = spindle::spawn("kv-expirer", [&] {
        while (spindle::this_fiber::sleep_for(std::chrono::milliseconds(100))) {
          std::lock_guard<spindle::Mutex> lock(db.mutex());
          db.expire_some(kv::now_ms(), 1000);
        }
      });

      auto sig = stop.wait();
      fmt::print(stderr, "spindle-kv: {}, shutting down\n",
                 sig ? (*sig == SIGINT ? "SIGINT" : "SIGTERM") : sig.error().message());
      acceptor.abort();
      expirer.abort();
      (void)acceptor.join();
      (void)expirer.join();
      if (auto c = log->close(); !c) {
        fmt::print(stderr, "spindle-kv: closing the log: {}\n", c.error().message());
        return 1;
      }
      return 0;
    });
  } catch (const std::exception& e) {
    fmt::print(stderr, "spindle-kv: {}\n", e.what());
    return 1;
  }
}
