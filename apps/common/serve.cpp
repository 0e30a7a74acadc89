#include "serve.hpp"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <exception>
#include <spindle/spindle.hpp>

#include "accept_loop.hpp"
#include "connection_set.hpp"
#include "fd_limit.hpp"
#include "listen.hpp"
#include "stop_signal.hpp"

namespace spindle::apps {
namespace {

using namespace std::chrono_literals;
using Handler = std::function<void(net::TcpStream&)>;

// The root fiber. Suspends: for the server's whole life.
int serve(std::string_view program, const ServerFlags& flags, const ServerHooks& hooks,
          StopSignal& stop, ConnectionSet& connections, ConnectionLimit& limit,
          const Handler& handle) {
  auto listener = listen_or_explain(program, flags.listen);
  if (!listener) return 1;
  std::string details;
  if (hooks.start) {
    auto started = hooks.start();
    if (!started) return 1;
    if (!started->empty()) details = std::move(*started) + ", ";
  }
  fmt::print("{}: listening on {} ({}{} worker{}, {}, up to {} connections)\n", program,
             listener->local_addr().value().to_string(), details, flags.workers,
             flags.workers == 1 ? "" : "s", current_runtime().io_backend(), limit.max());
  std::fflush(stdout);
  // Connections are children of the root, not of the acceptor, whose end
  // would abort them.
  const Context root = this_fiber::context();
  auto acceptor = spawn(hooks.acceptor_name, [&] {
    accept_loop(program, *listener, limit, [&](net::TcpStream stream, ConnectionLimit::Slot slot) {
      root.spawn(
          [stream = std::move(stream), slot = std::move(slot), &connections, handle]() mutable {
            const int fd = stream.native_handle();
            if (connections.add(fd)) {
              handle(stream);
              connections.remove(fd);
            }
            stream.close();
          });
    });
  });
  auto sig = stop.wait();
  fmt::print("{}: {}, stopping\n", program,
             sig ? (*sig == SIGINT ? "SIGINT" : "SIGTERM") : "aborted");
  std::fflush(stdout);
  acceptor.abort();
  (void)acceptor.join();
  listener->close();
  if (const std::size_t left = connections.stop(Clock::now() + seconds(flags.grace_s)); left > 0) {
    fmt::print(stderr, "{}: closing {} connection{} still open after the grace period\n", program,
               left, left == 1 ? "" : "s");
  }
  if (hooks.stop && !hooks.stop()) return 1;
  return 0;
}

}  // namespace

void ServerFlags::add_to(CLI::App& app) {
  app.add_option("-l,--listen", listen, "address to listen on (host:port; port 0 picks one)")
      ->capture_default_str();
  app.add_option("-w,--workers", workers, "worker threads")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--idle-timeout", idle_s,
                 idle_min_s == 0 ? "seconds a connection may stay silent (0: for ever)"
                                 : "seconds a connection may stay silent")
      ->check(CLI::Range(idle_min_s, idle_max_s))
      ->capture_default_str();
  app.add_option("--grace", grace_s, "seconds a stop waits for open connections")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  app.add_option("--max-connections", max_connections,
                 "connections open at once (0: as many as the descriptor limit, raised to its "
                 "hard value, leaves room for); one more is accepted and closed at once")
      ->check(CLI::Range(std::size_t{0}, std::size_t{10'000'000}))
      ->capture_default_str();
}

std::chrono::nanoseconds seconds(double s) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(s));
}

std::chrono::nanoseconds ServerFlags::idle_timeout() const { return seconds(idle_s); }

int run_server(std::string_view program, const ServerFlags& flags, const Handler& handle,
               const ServerHooks& hooks) {
  try {
    StopSignal stop;            // before any thread exists
    ConnectionSet connections;  // these two outlive every fiber
    ConnectionLimit limit(connection_limit(program, flags.max_connections, flags.workers));
    Config config;
    config.workers = flags.workers;
    config.zero_linger = false;
    Runtime runtime(config);
    return runtime.run(
        [&] { return serve(program, flags, hooks, stop, connections, limit, handle); });
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: {}\n", program, e.what());
    return 1;
  }
}

}  // namespace spindle::apps
