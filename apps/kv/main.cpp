// spindle-kv: a Redis-protocol (RESP2) key-value server on spindle, durable
// through a log in storage/ with group commit.
//
//   spindle-kv --listen 127.0.0.1:6380 --dir PATH --workers N --fsync always|everysec|no
//              [--commit-window USEC] [--compact] [--grace S]
//
// SIGINT or SIGTERM: stop accepting, let each connection answer what it
// already received (up to --grace), then write and sync the log and exit 0.
// SIGUSR1: a fiber dump on stderr.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <optional>
#include <spindle/spindle.hpp>
#include <string>

#include "commands.hpp"
#include "db.hpp"
#include "log.hpp"
#include "serve.hpp"
#include "server.hpp"

namespace {

constexpr std::string_view kProgram = "spindle-kv";

// How the keyspace is kept. Plain value.
struct StoreFlags {
  std::string dir = "spindle-kv-data";  // --dir
  std::string fsync = "always";         // --fsync
  bool compact = false;                 // --compact
  unsigned window_us = 200;             // --commit-window
};

// The keyspace, its log, and the fiber that expires keys: what the
// connections share. It lives in main(), outside the runtime, because it must
// outlast every fiber: connections still open after the grace period end only
// when the runtime does. start() and stop() run on the root fiber, connections
// call serve() on theirs between the two.
class Store {
 public:
  explicit Store(const StoreFlags& flags)
      : flags_(flags),
        policy_(flags.fsync == "always"     ? kv::FsyncPolicy::kAlways
                : flags.fsync == "everysec" ? kv::FsyncPolicy::kEverysec
                                            : kv::FsyncPolicy::kNo) {}

  // Recovers the keyspace from the log in --dir (or creates one), compacts it
  // with --compact, and starts the committer and the expirer. Returns the
  // banner's details, or nullopt (said why on stderr).
  // Suspends: for the storage operations.
  std::optional<std::string> start() {
    auto storage = spindle::storage::Storage::open_directory(flags_.dir);
    if (!storage) {
      fmt::print(stderr, "{}: storage directory {}: {}\n", kProgram, flags_.dir,
                 storage.error().message());
      return std::nullopt;
    }
    auto opened = kv::Log::open(*storage, policy_, db_, flags_.compact);
    if (!opened) {
      fmt::print(stderr, "{}: log in {}: {}\n", kProgram, flags_.dir, opened.error().message());
      return std::nullopt;
    }
    log_ = std::move(*opened);
    commands_.emplace(db_, *log_, policy_);
    log_->start(std::chrono::microseconds(flags_.window_us));
    expirer_ = spindle::spawn("kv-expirer", [this] {
      while (spindle::this_fiber::sleep_for(std::chrono::milliseconds(100))) {
        std::lock_guard<spindle::Mutex> lock(db_.mutex());
        db_.expire_some(kv::now_ms(), 1000);
      }
    });
    std::size_t keys;
    {
      std::lock_guard<spindle::Mutex> lock(db_.mutex());
      keys = db_.size();
    }
    return fmt::format("dir {}, fsync {}, {} keys, log.{}", flags_.dir, flags_.fsync, keys,
                       log_->generation());
  }

  // Suspends: on the socket, the keyspace and the log.
  void serve(spindle::net::TcpStream& stream, const kv::Limits& limits,
             const kv::Timeouts& timeouts) {
    kv::serve(stream, *commands_, *log_, limits, timeouts);
  }

  // Stops the expirer, then writes and syncs what the log holds. False (said
  // why on stderr) if that fails.
  // Suspends: for the write and the sync.
  bool stop() {
    expirer_.abort();
    (void)expirer_.join();
    if (auto c = log_->close(); !c) {
      fmt::print(stderr, "{}: closing the log: {}\n", kProgram, c.error().message());
      return false;
    }
    return true;
  }

 private:
  const StoreFlags flags_;
  const kv::FsyncPolicy policy_;
  kv::Db db_;
  std::unique_ptr<kv::Log> log_;          // set by start()
  std::optional<kv::Commands> commands_;  // set by start()
  spindle::JoinHandle<void> expirer_;     // set by start()
};

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"spindle-kv: a durable Redis-protocol key-value server on spindle"};
  // --idle-timeout: off by default, as redis's `timeout`.
  spindle::apps::ServerFlags flags{
      .listen = "127.0.0.1:6380", .idle_s = 0, .idle_min_s = 0, .idle_max_s = 86400.0 * 365};
  StoreFlags store_flags;
  kv::Limits limits;
  flags.add_to(app);
  app.add_option("--dir", store_flags.dir, "storage directory")->capture_default_str();
  app.add_option("--fsync", store_flags.fsync,
                 "always: sync before every reply (group commit); everysec: once a second; no: "
                 "leave it to the kernel")
      ->check(CLI::IsMember({"always", "everysec", "no"}))
      ->capture_default_str();
  app.add_option("--commit-window", store_flags.window_us,
                 "microseconds a write may wait for other clients' changes to join it, after "
                 "one that covered several clients (0: none)")
      ->check(CLI::Range(0u, 1'000'000u))
      ->capture_default_str();
  app.add_flag("--compact", store_flags.compact,
               "rewrite the log as one record per live key at start-up");
  app.add_option("--max-bulk-len", limits.max_bulk, "largest argument in bytes")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 30))
      ->capture_default_str();
  app.add_option("--max-array-len", limits.max_array, "most arguments in one command")
      ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 24))
      ->capture_default_str();
  double command_s = 30;
  app.add_option("--command-timeout", command_s,
                 "seconds from a command's first byte to its last (0: no limit)")
      ->check(CLI::Range(0.0, 86400.0 * 365))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  const kv::Timeouts timeouts{.idle = flags.idle_timeout(),
                              .command = spindle::apps::seconds(command_s)};

  Store store(store_flags);
  const spindle::apps::ServerHooks hooks{.acceptor_name = "kv-acceptor",
                                         .start = [&] { return store.start(); },
                                         .stop = [&] { return store.stop(); }};
  return spindle::apps::run_server(
      kProgram, flags,
      [&](spindle::net::TcpStream& stream) { store.serve(stream, limits, timeouts); }, hooks);
}
