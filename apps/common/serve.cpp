#include "serve.hpp"

#include <fmt/format.h>

#include <csignal>
#include <cstdio>
#include <spindle/spindle.hpp>

#include "listen.hpp"

namespace spindle::apps {

Config server_config(std::size_t workers) {
  Config config;
  config.workers = workers;
  config.zero_linger = false;
  return config;
}

int serve(const ServeOptions& options, StopSignal& stop, ConnectionSet& connections,
          const std::function<void(net::TcpListener&, const Context& root)>& accept_loop) {
  auto listener = listen_or_explain(options.program, options.listen);
  if (!listener) return 1;
  fmt::print("{}: listening on {} ({} worker{})\n", options.program,
             listener->local_addr().value().to_string(), options.workers,
             options.workers == 1 ? "" : "s");
  std::fflush(stdout);
  const Context root = this_fiber::context();
  auto acceptor = spawn([&] { accept_loop(*listener, root); });
  auto sig = stop.wait();
  fmt::print("{}: {}, stopping\n", options.program,
             sig ? (*sig == SIGINT ? "SIGINT" : "SIGTERM") : "aborted");
  std::fflush(stdout);
  acceptor.abort();
  (void)acceptor.join();
  listener->close();
  if (const std::size_t left = connections.stop(Clock::now() + options.grace); left > 0) {
    fmt::print(stderr, "{}: closing {} connection{} still open after the grace period\n",
               options.program, left, left == 1 ? "" : "s");
  }
  return 0;
}

}  // namespace spindle::apps
