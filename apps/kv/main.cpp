// spindle-kv: a Redis-protocol (RESP2) key-value server on spindle, durable
// through a log in storage/ with group commit.
//
//   spindle-kv --listen 127.0.0.1:6380 --dir PATH --workers N --fsync always|everysec|no
//
// SIGINT or SIGTERM: stop accepting, write and sync the log, exit 0.
#include <fmt/format.h>
#include <liburing.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <spindle/spindle.hpp>
#include <string>

#include "commands.hpp"
#include "db.hpp"
#include "log.hpp"
#include "resp.hpp"
#include "server.hpp"

namespace {

// Reads one signal from the signalfd through the ring (the fiber parks, the
// worker does not).
spindle::Result<int> wait_signal(int sfd) {
  signalfd_siginfo info{};
  auto r = spindle::io_op(
      [&](io_uring_sqe* sqe) noexcept { io_uring_prep_read(sqe, sfd, &info, sizeof info, 0); });
  if (!r) return spindle::failure(r.error());
  return static_cast<int>(info.ssi_signo);
}

}  // namespace

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
  app.add_flag("--compact", compact, "rewrite the log as one record per live key at start-up");
  app.add_option("--max-bulk-len", limits.max_bulk, "largest argument in bytes")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 30))
      ->capture_default_str();
  app.add_option("--max-array-len", limits.max_array, "most arguments in one command")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 24))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  const kv::FsyncPolicy policy = fsync == "always"     ? kv::FsyncPolicy::kAlways
                                 : fsync == "everysec" ? kv::FsyncPolicy::kEverysec
                                                       : kv::FsyncPolicy::kNo;
  auto addr = spindle::net::SocketAddress::parse(listen);
  if (!addr) {
    fmt::print(stderr, "spindle-kv: --listen: {}\n", addr.error());
    return 2;
  }

  // SIGINT and SIGTERM arrive through a signalfd; blocked before any thread
  // exists, so every worker inherits the mask.
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  if (pthread_sigmask(SIG_BLOCK, &mask, nullptr) != 0) return 1;
  const int sfd = ::signalfd(-1, &mask, SFD_CLOEXEC);
  if (sfd < 0) {
    std::perror("spindle-kv: signalfd");
    return 1;
  }

  // What the fibers share lives here, outside the runtime: it must outlast
  // every fiber, and the runtime ends the others only after the root returns.
  kv::Db db;
  std::unique_ptr<kv::Log> log;
  std::optional<kv::Commands> commands;
  try {
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
      log->start();

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
      fmt::print("spindle-kv: listening on {} (dir {}, fsync {}, {} workers, {} keys, log.{})\n",
                 bound ? bound->to_string() : listen, dir, fsync, workers, keys, log->generation());
      std::fflush(stdout);

      // Connections are the acceptor's children: aborting it ends them all.
      auto acceptor = spindle::spawn("kv-acceptor", [&] {
        for (;;) {
          auto s = listener->accept();
          if (!s) {
            if (spindle::this_fiber::aborted()) return;
            fmt::print(stderr, "spindle-kv: accept: {}\n", s.error().message());
            (void)spindle::this_fiber::sleep_for(std::chrono::milliseconds(10));
            continue;
          }
          spindle::spawn([&, stream = std::move(*s)]() mutable {
            kv::serve(std::move(stream), *commands, *log, limits);
          }).detach();
        }
      });
      auto expirer = spindle::spawn("kv-expirer", [&] {
        while (spindle::this_fiber::sleep_for(std::chrono::milliseconds(100))) {
          std::lock_guard<spindle::Mutex> lock(db.mutex());
          db.expire_some(kv::now_ms(), 1000);
        }
      });

      auto sig = wait_signal(sfd);
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
