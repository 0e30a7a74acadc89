// spindle-example-fanout: asks several HTTP servers for "/" at once, one
// fiber per target, and prints per target how many bytes came back and the
// status line, or what went wrong (refused, timed out, ...). Every call of a
// target shares one deadline, --timeout-ms from its start, so the whole run
// takes about that long at most, however the servers behave.
//
//   spindle-example-fanout --timeout-ms 2000 example.org:80 127.0.0.1:8080
//
// Exits 0 if every target answered, else 1.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <array>
#include <chrono>
#include <cstddef>
#include <exception>
#include <expected>
#include <spindle/spindle.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace net = spindle::net;

struct Reply {
  std::size_t bytes = 0;
  std::string status_line;
};

// What went wrong, with the step: "connect: Connection refused".
using Outcome = std::expected<Reply, std::string>;

std::unexpected<std::string> failed(std::string_view step, std::string_view why) {
  return std::unexpected(fmt::format("{}: {}", step, why));
}

// GET / from `target` ("host:port"), every call bounded by `deadline`.
// Suspends: for the lookup, the connect, the send and the reads.
Outcome fetch(const std::string& target, spindle::Deadline deadline) {
  auto host_port = net::parse_host_port(target);
  if (!host_port) return failed("address", host_port.error());
  // A literal resolves at once; a name runs getaddrinfo on the blocking pool.
  auto addresses = net::resolve(host_port->host, host_port->port);
  if (!addresses) return failed("resolve", addresses.error().message());

  const auto timeout = net::Timeout::at(deadline);
  auto stream = net::TcpStream::connect(addresses->front(), timeout);
  if (!stream) return failed("connect", stream.error().message());
  const std::string request =
      fmt::format("GET / HTTP/1.0\r\nHost: {}\r\nConnection: close\r\n\r\n", host_port->host);
  if (auto sent = stream->write_all(request, timeout); !sent)
    return failed("send", sent.error().message());

  Reply reply;
  std::string head;  // the reply's start, until its first line is complete
  std::array<char, 16 * 1024> buf;
  for (;;) {
    auto n = stream->read(buf, timeout);
    if (!n) return failed("read", n.error().message());
    if (*n == 0) break;  // HTTP/1.0: the server closes after the reply
    reply.bytes += *n;
    if (head.find('\n') == std::string::npos) head.append(buf.data(), *n);
  }
  reply.status_line = head.substr(0, head.find_first_of("\r\n"));
  return reply;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"spindle-example-fanout: GET / from several servers at once"};
  std::vector<std::string> targets;
  int timeout_ms = 2000;
  std::size_t workers = 2;
  app.add_option("targets", targets, "servers as host:port")->required();
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
          fmt::print("{}: {} bytes: {}\n", targets[i], outcome->bytes, outcome->status_line);
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
