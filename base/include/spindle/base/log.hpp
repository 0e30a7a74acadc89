// How the library's messages leave it: a level and a sink. Every message of
// spindle's libraries goes through write_log(); Config::on_log is the sink a
// runtime uses. Stateless; thread-safe as far as the sink is.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string_view>

namespace spindle {

enum class LogLevel : std::uint8_t {
  kError,    // something failed: a task's exception, an I/O call the runtime made for itself
  kWarning,  // something is wrong but handled: a stall, a limit reached, damaged data
  kInfo,     // how the runtime adapted: a kernel feature it did without
};

// Receives one message (one or more lines, without a final newline). Called
// on whichever thread logs, at that moment: it must be thread-safe, and it
// must not wait on the runtime (no call that suspends, no lock a fiber holds).
using LogSink = std::function<void(LogLevel level, std::string_view message)>;

// "spindle: " with "warning: " or "note: " for those levels, the message, a
// newline: one write to stderr.
inline void write_log_to_stderr(LogLevel level, std::string_view message) noexcept {
  const char* kind = level == LogLevel::kWarning ? "warning: "
                     : level == LogLevel::kInfo  ? "note: "
                                                 : "";
  std::fprintf(stderr, "spindle: %s%.*s\n", kind, static_cast<int>(message.size()), message.data());
  std::fflush(stderr);
}

// Hands `message` to `sink`, or to stderr when the sink is empty or throws.
inline void write_log(const LogSink& sink, LogLevel level, std::string_view message) noexcept {
  if (sink) {
    try {
      sink(level, message);
      return;
    } catch (...) {
    }
  }
  write_log_to_stderr(level, message);
}

}  // namespace spindle
