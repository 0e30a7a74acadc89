// The accept loop of the servers in apps/: a cap on open connections, and
// failed accepts (out of descriptors or memory) that the server survives.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <optional>
#include <string_view>

#include "spindle/net/listener.hpp"
#include "spindle/net/stream.hpp"

namespace spindle::apps {

// How many connections are open, against a maximum. Thread-safe.
class ConnectionLimit {
 public:
  // One open connection's share of the limit, given back when destroyed.
  class Slot {
   public:
    Slot(Slot&& other) noexcept : limit_(other.limit_) { other.limit_ = nullptr; }
    Slot& operator=(Slot&&) = delete;
    ~Slot() {
      if (limit_) limit_->open_.fetch_sub(1, std::memory_order_relaxed);
    }

   private:
    friend class ConnectionLimit;
    explicit Slot(ConnectionLimit* limit) noexcept : limit_(limit) {}
    ConnectionLimit* limit_;
  };

  explicit ConnectionLimit(std::size_t max) noexcept : max_(max) {}
  ConnectionLimit(const ConnectionLimit&) = delete;
  ConnectionLimit& operator=(const ConnectionLimit&) = delete;

  // A slot, or false when `max` connections are open.
  bool try_take(std::optional<Slot>& out) noexcept;
  std::size_t max() const noexcept { return max_; }
  std::size_t open() const noexcept { return open_.load(std::memory_order_relaxed); }

 private:
  const std::size_t max_;
  std::atomic<std::size_t> open_{0};
};

using StartConnection = std::function<void(net::TcpStream, ConnectionLimit::Slot)>;

// Accepts on `listener` until the calling fiber is aborted, then returns.
// Each connection goes to `start` with its slot (keep the slot as long as the
// connection is open). A connection beyond limit.max() is closed at once. A
// failed accept is retried 10 ms later. Both are reported on stderr, prefixed
// with `program`, at most once a second each, with how many happened since
// the last report. Fiber-only; one loop per listener.
// Suspends: until aborted.
void accept_loop(std::string_view program, net::TcpListener& listener, ConnectionLimit& limit,
                 const StartConnection& start);

}  // namespace spindle::apps
