// Config::on_log: every message of the runtime goes to the sink with its
// level: a task's exception, a limit reached, code's own runtime_log().
#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "runtime_harness.hpp"

using spindle::LogLevel;

namespace {

// What a sink received. Thread-safe.
struct Received {
  std::mutex mutex;
  std::vector<std::pair<LogLevel, std::string>> messages;

  spindle::LogSink sink() {
    return [this](LogLevel level, std::string_view m) {
      std::lock_guard lock(mutex);
      messages.emplace_back(level, std::string(m));
    };
  }
  // The messages at `level` that contain `text`.
  std::size_t count(LogLevel level, std::string_view text) {
    std::lock_guard lock(mutex);
    std::size_t n = 0;
    for (const auto& [l, m] : messages) n += l == level && m.find(text) != std::string::npos;
    return n;
  }
};

}  // namespace

TEST_CASE("on_log receives a task's exception, a limit reached and runtime_log's messages",
          "[log]") {
  Received got;
  spindle::test::run(
      [] {
        auto thrower = spindle::spawn("thrower", [] { throw std::runtime_error("boom"); });
        CHECK(thrower.join().error() == spindle::errc::exited);

        int fds[2];
        REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
        char a = 0, b = 0;
        auto reader = spindle::spawn(
            [&] { return spindle::io::read(fds[0], std::as_writable_bytes(std::span(&a, 1)), 0); });
        REQUIRE(spindle::this_fiber::yield());  // one worker: the reader is parked in its read
        auto refused = spindle::io::read(fds[0], std::as_writable_bytes(std::span(&b, 1)), 0);
        CHECK(refused.error() == spindle::errc::io_limit);
        REQUIRE(::write(fds[1], "x", 1) == 1);
        CHECK(reader.join().value().value() == 1);
        ::close(fds[0]);
        ::close(fds[1]);

        spindle::runtime_log(LogLevel::kInfo, "a note from a fiber");
      },
      spindle::Config{
          .workers = 1, .max_io_in_flight = 1, .catch_exceptions = true, .on_log = got.sink()});
  CHECK(got.count(LogLevel::kError, "fiber") == 1);
  CHECK(got.count(LogLevel::kError, "'thrower' exited by exception: boom") == 1);
  CHECK(got.count(LogLevel::kWarning, "Config::max_io_in_flight") == 1);
  CHECK(got.count(LogLevel::kInfo, "a note from a fiber") == 1);
}

TEST_CASE("a sink that throws leaves the message to stderr and the runtime running", "[log]") {
  // stderr into a file for the length of the run.
  std::FILE* captured = std::tmpfile();
  REQUIRE(captured != nullptr);
  std::fflush(stderr);
  const int saved = ::dup(2);
  REQUIRE(::dup2(::fileno(captured), 2) == 2);
  const int answer = spindle::test::run(
      [] {
        spindle::runtime_log(LogLevel::kWarning, "to a throwing sink");
        return 42;
      },
      spindle::Config{.workers = 1, .on_log = [](LogLevel, std::string_view) {
                        throw std::runtime_error("sink down");
                      }});
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::string text(4096, '\0');
  std::rewind(captured);
  text.resize(std::fread(text.data(), 1, text.size(), captured));
  std::fclose(captured);
  CHECK(answer == 42);
  CHECK(text == "spindle: warning: to a throwing sink\n");
}
