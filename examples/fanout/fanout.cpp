// spindle-example-fanout: asks several HTTP or HTTPS servers for a page at
// once, one fiber per target, with spindle::http's client, and prints per
// target the status line and the body's size, or what went wrong (refused,
// timed out, a certificate refused, ...). Each target's request has one
// deadline, --timeout-ms from its start, so the whole run takes about that
// long at most, however the servers behave.
//
//   spindle-example-fanout --timeout-ms 2000 https://example.org/ 127.0.0.1:8080
//
// A target without a scheme is http://<target>/. Exits 0 if every target
// answered, else 1.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstddef>
#include <exception>
#include <expected>
#include <spindle/spindle.hpp>
#include <string>
#include <vector>

namespace {

namespace http = spindle::http;
namespace net = spindle::net;

// "HTTP/1.1 200 OK, 5 bytes", or what went wrong.
using Outcome = std::expected<std::string, std::string>;

// GET `target`, every step of it bounded by `deadline`.
// Suspends: for the lookup, the connect, the handshake, the request and the reply.
Outcome fetch(const std::string& target, spindle::Deadline deadline) {
  const std::string url =
      target.find("://") == std::string::npos ? "http://" + target + "/" : target;
  auto reply = http::get(url, {.timeout = net::Timeout::at(deadline)});
  if (!reply) return std::unexpected(reply.error().message());
  return fmt::format("HTTP/{}.{} {} {}, {} bytes", reply->version / 10, reply->version % 10,
                     reply->status, reply->reason, reply->body.size());
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"spindle-example-fanout: GET a page from several servers at once"};
  std::vector<std::string> targets;
  int timeout_ms = 2000;
  std::size_t workers = 2;
  app.add_option("targets", targets, "URLs (http:// or https://), or host:port for http")
      ->required();
  app.add_option("-t,--timeout-ms", timeout_ms, "milliseconds each target may take")
      ->check(CLI::Range(1, 3'600'000))
      ->capture_default_str();
  app.add_option("-w,--workers", workers, "worker threads")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    spindle::Runtime runtime(spindle::Config{.workers = workers});
    return runtime.run([&] {
      std::vector<spindle::JoinHandle<Outcome>> fibers;
      for (const auto& target : targets) {
        const auto deadline = spindle::Clock::now() + std::chrono::milliseconds(timeout_ms);
        fibers.push_back(spindle::spawn([&target, deadline] { return fetch(target, deadline); }));
      }
      int status = 0;
      for (std::size_t i = 0; i < targets.size(); ++i) {
        const Outcome outcome = fibers[i].join().value();
        if (outcome) {
          fmt::print("{}: {}\n", targets[i], *outcome);
        } else {
          fmt::print("{}: {}\n", targets[i], outcome.error());
          status = 1;
        }
      }
      return status;
    });
  } catch (const std::exception& e) {
    fmt::print(stderr, "spindle-example-fanout: {}\n", e.what());
    return 1;
  }
}
