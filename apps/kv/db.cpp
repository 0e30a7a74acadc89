#include "db.hpp"

namespace kv {

Entry* Db::find(std::string_view key, UnixMs now) {
  auto it = map_.find(key);
  if (it == map_.end()) return nullptr;
  if (it->second.expire_at != 0 && it->second.expire_at <= now) {
    map_.erase(it);
    return nullptr;
  }
  return &it->second;
}

Entry& Db::set(std::string_view key, std::string_view value, UnixMs expire_at) {
  auto it = map_.find(key);
  if (it == map_.end()) it = map_.emplace(std::string(key), Entry{}).first;
  it->second.value.assign(value);
  set_expire(it->first, it->second, expire_at);
  return it->second;
}

void Db::set_expire(std::string_view key, Entry& e, UnixMs expire_at) {
  e.expire_at = expire_at;
  if (expire_at == 0) return;
  deadlines_.emplace(expire_at, std::string(key));
  // Keys whose expiry keeps changing leave stale deadlines behind: rebuild
  // from the live keys when they dominate.
  if (deadlines_.size() > 1024 && deadlines_.size() > 2 * map_.size()) {
    std::vector<Deadline> live;
    for (const auto& [k, v] : map_) {
      if (v.expire_at != 0) live.emplace_back(v.expire_at, k);
    }
    deadlines_ = decltype(deadlines_)(std::greater<>(), std::move(live));
  }
}

bool Db::erase(std::string_view key) {
  auto it = map_.find(key);
  if (it == map_.end()) return false;
  map_.erase(it);
  return true;
}

void Db::clear() {
  map_.clear();
  deadlines_ = {};
}

std::size_t Db::expire_some(UnixMs now, std::size_t max) {
  std::size_t removed = 0;
  while (removed < max && !deadlines_.empty() && deadlines_.top().first <= now) {
    const auto& [at, key] = deadlines_.top();
    auto it = map_.find(key);
    // Stale unless the key still carries this very expiry.
    if (it != map_.end() && it->second.expire_at == at) {
      map_.erase(it);
      ++removed;
    }
    deadlines_.pop();
  }
  return removed;
}

}  // namespace kv
