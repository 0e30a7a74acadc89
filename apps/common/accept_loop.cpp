#include "accept_loop.hpp"

#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>

#include "spindle/base/errc.hpp"
#include "spindle/sched/this_fiber.hpp"

namespace spindle::apps {
namespace {

using namespace std::chrono_literals;

// One kind of event reported at most once a second, with a count of the
// events folded into each report. Used by one fiber.
class Throttle {
 public:
  // Counts an event; true if it should be reported now, and then `count()`
  // is how many events the report stands for.
  bool note() {
    ++pending_;
    const auto now = std::chrono::steady_clock::now();
    if (last_ && now - *last_ < 1s) return false;
    last_ = now;
    return true;
  }
  // The events the report being made stands for; resets the count.
  std::size_t take() { return std::exchange(pending_, 0); }

 private:
  std::optional<std::chrono::steady_clock::time_point> last_;
  std::size_t pending_ = 0;
};

std::string times(std::size_t n) { return n == 1 ? "" : fmt::format(" ({} times)", n); }

// For a failure to get a descriptor, the limit it ran into.
std::string descriptor_limit_hint(const std::error_code& e) {
  rlimit rl{};
  if (e != std::errc::too_many_files_open || ::getrlimit(RLIMIT_NOFILE, &rl) != 0) return "";
  return fmt::format(" (RLIMIT_NOFILE is {})", rl.rlim_cur);
}

}  // namespace

bool ConnectionLimit::try_take(std::optional<Slot>& out) noexcept {
  std::size_t n = open_.load(std::memory_order_relaxed);
  do {
    if (n >= max_) return false;
  } while (!open_.compare_exchange_weak(n, n + 1, std::memory_order_relaxed));
  out.emplace(Slot(this));
  return true;
}

void accept_loop(std::string_view program, net::TcpListener& listener, ConnectionLimit& limit,
                 const StartConnection& start) {
  Throttle failed;
  Throttle refused;
  for (;;) {
    auto conn = listener.accept();
    if (!conn) {
      if (conn.error() == errc::aborted || this_fiber::aborted()) return;
      if (failed.note()) {
        const std::size_t n = failed.take();
        fmt::print(stderr, "{}: accept: {}{}{}; retrying every 10 ms\n", program,
                   conn.error().message(), descriptor_limit_hint(conn.error()), times(n));
      }
      if (!this_fiber::sleep_for(10ms)) return;
      continue;
    }
    std::optional<ConnectionLimit::Slot> slot;
    if (!limit.try_take(slot)) {
      conn->close();
      if (refused.note()) {
        const std::size_t n = refused.take();
        fmt::print(stderr,
                   "{}: refused {} connection{}: {} open, as many as --max-connections allows\n",
                   program, n, n == 1 ? "" : "s", limit.max());
      }
      continue;
    }
    start(std::move(*conn), std::move(*slot));
  }
}

}  // namespace spindle::apps
