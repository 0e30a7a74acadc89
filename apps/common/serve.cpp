#include "serve.hpp"

#include <fmt/format.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <spindle/spindle.hpp>
#include <string_view>

#include "listen.hpp"

namespace spindle::apps {
namespace {

using namespace std::chrono_literals;

void accept_loop(std::string_view program, net::TcpListener& listener,
                 ConnectionSet& connections, const Context& root,
                 const std::function<void(net::TcpStream&)>& handle) {
  for (;;) {
    auto conn = listener.accept();
    if (!conn) {
      if (conn.error() == errc::aborted) return;
      fmt::print(stderr, "{}: accept: {}\n", program, conn.error().message());
      if (!this_fiber::sleep_for(10ms)) return;
      continue;
    }
    root.spawn([stream = std::move(*conn), &connections, handle]() mutable {
      const int fd = stream.native_handle();
      if (connections.add(fd)) {
        handle(stream);
        connections.remove(fd);
      }
      stream.close();
    });
  }
}

}  // namespace

Config server_config(std::size_t workers) {
  Config config;
  config.workers = workers;
  config.zero_linger = false;
  return config;
}

int serve(const ServeOptions& options, StopSignal& stop, ConnectionSet& connections,
          const std::function<void(net::TcpStream&)>& handle) {
  auto listener = listen_or_explain(options.program, options.listen);
  if (!listener) return 1;
  fmt::print("{}: listening on {} ({} worker{})\n", options.program,
             listener->local_addr().value().to_string(), options.workers,
             options.workers == 1 ? "" : "s");
  std::fflush(stdout);
  const Context root = this_fiber::context();
  auto acceptor =
      spawn([&] { accept_loop(options.program, *listener, connections, root, handle); });
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
