// Pool: a Client's idle connections, by origin.
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "connection.hpp"
#include "spindle/http/client.hpp"
#include "spindle/sched/mutex.hpp"

namespace spindle::http::detail {

// Thread-safe (fibers and plain threads).
class Pool {
 public:
  explicit Pool(ClientOptions options) : options_(std::move(options)) {}

  const ClientOptions& options() const noexcept { return options_; }

  // The most recently idle connection to `origin` not idle past
  // options().idle_timeout (older ones are closed).
  // Suspends: only briefly, on the internal lock.
  std::optional<Connection> take(const std::string& origin);
  // Keeps `connection` for the next request to `origin`, unless
  // options().max_idle_per_origin are kept already (then it is closed).
  // Suspends: only briefly, on the internal lock.
  void give(const std::string& origin, Connection connection);

  void count_opened() noexcept { opened_.fetch_add(1, std::memory_order_relaxed); }
  std::size_t opened() const noexcept { return opened_.load(std::memory_order_relaxed); }
  // Suspends: only briefly, on the internal lock.
  std::size_t idle() const;

 private:
  const ClientOptions options_;
  std::atomic<std::size_t> opened_{0};  // a statistic: relaxed
  mutable Mutex lock_;
  // Per origin, oldest first. Guarded by lock_.
  std::unordered_map<std::string, std::vector<Connection>> idle_;
};

}  // namespace spindle::http::detail
