// Db: the keyspace (string keys to string values with optional expiry) in
// memory. The log (log.hpp) makes it durable; this file knows nothing of disk.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <queue>
#include <spindle/sched/mutex.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kv {

// Milliseconds since the Unix epoch: expiry times are absolute so they mean
// the same after a restart.
using UnixMs = std::int64_t;
inline UnixMs now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct Entry {
  std::string value;
  UnixMs expire_at = 0;  // 0: never
};

// Thread-safe only under mutex(): every call requires it held. Keys whose
// time has come are removed lazily (when looked up) and actively (expire_some).
class Db {
 public:
  spindle::Mutex& mutex() noexcept { return mutex_; }

  // The live entry, or null (an expired one is removed first).
  Entry* find(std::string_view key, UnixMs now);
  // Inserts or replaces.
  Entry& set(std::string_view key, std::string_view value, UnixMs expire_at);
  void set_expire(std::string_view key, Entry& e, UnixMs expire_at);
  bool erase(std::string_view key);
  void clear();
  std::size_t size() const noexcept { return map_.size(); }

  // Removes up to `max` keys whose expiry passed; returns how many.
  std::size_t expire_some(UnixMs now, std::size_t max);

  // Calls fn(key, entry) for every live entry.
  template <class F>
  void for_each(UnixMs now, F&& fn) const {
    for (const auto& [k, e] : map_) {
      if (e.expire_at == 0 || e.expire_at > now) fn(k, e);
    }
  }

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };
  // Expiry times, soonest first; an entry is stale once its key's expiry changed.
  using Deadline = std::pair<UnixMs, std::string>;

  spindle::Mutex mutex_;
  std::unordered_map<std::string, Entry, Hash, std::equal_to<>> map_;  // guarded by mutex_
  std::priority_queue<Deadline, std::vector<Deadline>, std::greater<>>
      deadlines_;  // guarded by mutex_
};

}  // namespace kv
