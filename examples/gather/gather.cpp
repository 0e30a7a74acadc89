// spindle-example-gather: a scatter-gather request that needs every backend.
// It sends one line to each backend (an echo server, such as spindle-echo) at
// once, one fiber per backend in a TaskGroup, and reads the line back. The
// whole gather runs under one deadline (this_fiber::with_timeout): every
// connect, write and read inside ends there. The first backend to fail (or
// to echo something else) aborts the others, so the answer comes as soon as
// it is known.
//
//   spindle-echo --listen 127.0.0.1:7001 & spindle-echo --listen 127.0.0.1:7002 &
//   spindle-example-gather --timeout-ms 500 127.0.0.1:7001 127.0.0.1:7002
//
// Prints each backend's round trip and exits 0, or prints why the gather
// failed and exits 1.

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstddef>
#include <exception>
#include <mutex>
#include <spindle/spindle.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace net = spindle::net;
using Clock = spindle::Clock;

constexpr std::string_view kProgram = "spindle-example-gather";

// What went wrong first, for the report: the backend and the step.
struct Failure {
  std::mutex mutex;
  std::string what;  // empty until a backend failed

  void note(const std::string& target, std::string_view step, std::string_view why) {
    std::lock_guard lock(mutex);
    if (what.empty()) what = fmt::format("{}: {}: {}", target, step, why);
  }
};

// One round trip to `target`: connect, send `line`, read it back. Every call
// waits at most until the caller's deadline scope ends. A mismatched echo
// fails with errc::closed.
spindle::Result<void> round_trip(const std::string& target, const std::string& line,
                                 Failure& failure) {
  auto fail = [&](std::string_view step, std::error_code e) -> spindle::Result<void> {
    failure.note(target, step, e.message());
    return spindle::failure(e);
  };
  auto address = net::SocketAddress::parse(target);
  if (!address) {
    failure.note(target, "address", address.error());
    return spindle::failure(std::make_error_code(std::errc::invalid_argument));
  }
  auto stream = net::TcpStream::connect(*address);
  if (!stream) return fail("connect", stream.error());
  if (auto sent = stream->write_all(line + "\n"); !sent) return fail("send", sent.error());
  std::string echo(line.size() + 1, '\0');
  if (auto got = stream->read_exact(std::span<char>(echo)); !got) return fail("read", got.error());
  if (echo != line + "\n") {
    failure.note(target, "echo", "a different line came back");
    return spindle::failure(spindle::errc::closed);
  }
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"spindle-example-gather: one line to every backend, all or nothing"};
  std::vector<std::string> targets;
  std::string line = "ping";
  int timeout_ms = 1000;
  std::size_t workers = 2;
  app.add_option("targets", targets, "echo backends as ip:port")->required();
  app.add_option("-m,--message", line, "the line to send")->capture_default_str();
  app.add_option("-t,--timeout-ms", timeout_ms, "milliseconds the whole gather may take")
      ->check(CLI::Range(1, 3'600'000))
      ->capture_default_str();
  app.add_option("-w,--workers", workers, "worker threads")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    spindle::Runtime runtime(spindle::Config{.workers = workers});
    return runtime.run([&] {
      Failure failure;
      std::vector<std::chrono::microseconds> took(targets.size());
      const auto start = Clock::now();
      const auto gathered =
          spindle::this_fiber::with_timeout(std::chrono::milliseconds(timeout_ms), [&] {
            spindle::TaskGroup group;
            for (std::size_t i = 0; i < targets.size(); ++i) {
              group.spawn([&, i]() -> spindle::Result<void> {
                const auto t0 = Clock::now();
                auto r = round_trip(targets[i], line, failure);
                took[i] = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0);
                return r;
              });
            }
            return group.wait();
          });
      const auto ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
      if (!gathered) {
        const std::string why =
            gathered.error() == spindle::errc::timed_out
                ? fmt::format("no answer from every backend in {} ms", timeout_ms)
                : failure.what;
        fmt::print("{}: gather failed after {} ms: {}\n", kProgram, ms, why);
        return 1;
      }
      for (std::size_t i = 0; i < targets.size(); ++i) {
        fmt::print("{}: echoed in {} us\n", targets[i], took[i].count());
      }
      fmt::print("{}: {} backends in {} ms\n", kProgram, targets.size(), ms);
      return 0;
    });
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: {}\n", kProgram, e.what());
    return 1;
  }
}
