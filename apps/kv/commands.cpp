// The commands, with redis's replies and error messages (so that redis-cli
// and redis-benchmark behave as against redis-server).
#include "commands.hpp"

#include <charconv>
#include <limits>
#include <mutex>

namespace kv {
namespace {

constexpr std::string_view kSyntax = "ERR syntax error";
constexpr std::string_view kNotInt = "ERR value is not an integer or out of range";

bool eq_nocase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// redis's string2ll: no spaces, no '+', no leading zeros, fits in int64.
bool parse_int(std::string_view s, std::int64_t& out) {
  if (s.empty() || s.size() > 20) return false;
  if (s.size() > 1 && s[0] == '0') return false;
  if (s.size() > 2 && s[0] == '-' && s[1] == '0') return false;
  if (s == "-") return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}

void wrong_args(std::string& out, std::string_view cmd) {
  std::string msg = "ERR wrong number of arguments for '";
  for (char c : cmd) msg += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
  msg += "' command";
  reply_error(out, msg);
}

struct Spec {
  std::string_view name;
  int arity;                      // redis style: n exactly, -n at least n (the command included)
  int first_key, last_key, step;  // as COMMAND reports them (0: no keys)
};

constexpr Spec kSpecs[] = {
    {"ping", -1, 0, 0, 0},   {"echo", 2, 0, 0, 0},     {"get", 2, 1, 1, 1},
    {"set", -3, 1, 1, 1},    {"del", -2, 1, -1, 1},    {"exists", -2, 1, -1, 1},
    {"incr", 2, 1, 1, 1},    {"decr", 2, 1, 1, 1},     {"incrby", 3, 1, 1, 1},
    {"decrby", 3, 1, 1, 1},  {"mget", -2, 1, -1, 1},   {"mset", -3, 1, -1, 2},
    {"expire", -3, 1, 1, 1}, {"pexpire", -3, 1, 1, 1}, {"ttl", 2, 1, 1, 1},
    {"pttl", 2, 1, 1, 1},    {"dbsize", 1, 0, 0, 0},   {"flushall", -1, 0, 0, 0},
    {"keys", 2, 0, 0, 0},    {"command", -1, 0, 0, 0}, {"config", -2, 0, 0, 0},
    {"select", 2, 0, 0, 0},  {"quit", -1, 0, 0, 0},
};

bool arity_ok(int arity, std::size_t argc) {
  return arity > 0 ? argc == static_cast<std::size_t>(arity)
                   : argc >= static_cast<std::size_t>(-arity);
}

bool glob_impl(const char* p, std::size_t plen, const char* s, std::size_t slen, int depth) {
  if (depth > 1000) return false;  // a pathological pattern
  while (plen > 0 && slen > 0) {
    switch (*p) {
      case '*': {
        while (plen > 1 && p[1] == '*') {
          ++p;
          --plen;
        }
        if (plen == 1) return true;
        while (slen > 0) {
          if (glob_impl(p + 1, plen - 1, s, slen, depth + 1)) return true;
          ++s;
          --slen;
        }
        return false;
      }
      case '?':
        ++s;
        --slen;
        break;
      case '[': {
        ++p;
        --plen;
        const bool negate = plen > 0 && *p == '^';
        if (negate) {
          ++p;
          --plen;
        }
        bool match = false;
        for (;;) {
          if (plen == 0) break;
          if (*p == '\\' && plen >= 2) {
            ++p;
            --plen;
            if (*p == *s) match = true;
          } else if (*p == ']') {
            break;
          } else if (plen >= 3 && p[1] == '-') {
            char lo = p[0], hi = p[2];
            if (lo > hi) std::swap(lo, hi);
            if (*s >= lo && *s <= hi) match = true;
            p += 2;
            plen -= 2;
          } else if (*p == *s) {
            match = true;
          }
          ++p;
          --plen;
        }
        if (negate) match = !match;
        if (!match) return false;
        ++s;
        --slen;
        if (plen == 0) return slen == 0;  // an unterminated class ends the pattern
        break;
      }
      case '\\':
        if (plen >= 2) {
          ++p;
          --plen;
        }
        [[fallthrough]];
      default:
        if (*p != *s) return false;
        ++s;
        --slen;
        break;
    }
    ++p;
    --plen;
  }
  while (plen > 0 && *p == '*') {
    ++p;
    --plen;
  }
  return plen == 0 && slen == 0;
}

}  // namespace

bool glob_match(std::string_view pattern, std::string_view s) {
  return glob_impl(pattern.data(), pattern.size(), s.data(), s.size(), 0);
}

void Commands::run(Args a, std::string& out, Session& session) {
  const std::string_view c = a[0];
  // The hot pair first.
  if (eq_nocase(c, "get")) {
    if (a.size() != 2) return wrong_args(out, c);
    return get(a, out);
  }
  if (eq_nocase(c, "set")) {
    if (a.size() < 3) return wrong_args(out, c);
    return set(a, out);
  }
  for (const Spec& s : kSpecs) {
    if (!eq_nocase(c, s.name)) continue;
    if (!arity_ok(s.arity, a.size())) return wrong_args(out, c);
    const std::string_view n = s.name;
    if (n == "ping") return ping(a, out);
    if (n == "echo") return echo(a, out);
    if (n == "del") return del(a, out);
    if (n == "exists") return exists(a, out);
    if (n == "incr") return incr_by(a, out, 1, false);
    if (n == "decr") return incr_by(a, out, -1, false);
    if (n == "incrby") return incr_by(a, out, 1, true);
    if (n == "decrby") return incr_by(a, out, -1, true);
    if (n == "mget") return mget(a, out);
    if (n == "mset") return mset(a, out);
    if (n == "expire") return expire(a, out, false);
    if (n == "pexpire") return expire(a, out, true);
    if (n == "ttl") return ttl(a, out, false);
    if (n == "pttl") return ttl(a, out, true);
    if (n == "dbsize") return dbsize(a, out);
    if (n == "flushall") return flushall(a, out);
    if (n == "keys") return keys(a, out);
    if (n == "command") return command(a, out);
    if (n == "config") return config(a, out);
    if (n == "select") return select(a, out);
    if (n == "quit") {
      reply_simple(out, "OK");
      session.close = true;
      return;
    }
  }
  std::string msg = "ERR unknown command '";
  msg.append(c.substr(0, 128));
  msg += "', with args beginning with: ";
  for (std::size_t i = 1; i < a.size() && msg.size() < 512; ++i) {
    msg += '\'';
    msg.append(a[i].substr(0, 128));
    msg += "' ";
  }
  // A reply line must not contain CR or LF.
  for (char& ch : msg) {
    if (ch == '\r' || ch == '\n') ch = ' ';
  }
  reply_error(out, msg);
}

void Commands::ping(Args a, std::string& out) {
  if (a.size() > 2) return wrong_args(out, a[0]);
  if (a.size() == 2) return reply_bulk(out, a[1]);
  reply_simple(out, "PONG");
}

void Commands::echo(Args a, std::string& out) { reply_bulk(out, a[1]); }

void Commands::get(Args a, std::string& out) {
  std::lock_guard<spindle::Mutex> lock(db_.mutex());
  if (const Entry* e = db_.find(a[1], now_ms())) return reply_bulk(out, e->value);
  reply_nil(out);
}

void Commands::set(Args a, std::string& out) {
  enum { kNone, kNx, kXx } cond = kNone;
  bool keep_ttl = false, get_old = false, has_expiry = false;
  UnixMs expire_at = 0;
  const UnixMs now = now_ms();
  for (std::size_t i = 3; i < a.size(); ++i) {
    const std::string_view opt = a[i];
    if (eq_nocase(opt, "nx") && cond != kXx) {
      cond = kNx;
    } else if (eq_nocase(opt, "xx") && cond != kNx) {
      cond = kXx;
    } else if (eq_nocase(opt, "get")) {
      get_old = true;
    } else if (eq_nocase(opt, "keepttl") && !has_expiry) {
      keep_ttl = true;
    } else if ((eq_nocase(opt, "ex") || eq_nocase(opt, "px") || eq_nocase(opt, "exat") ||
                eq_nocase(opt, "pxat")) &&
               !has_expiry && !keep_ttl && i + 1 < a.size()) {
      std::int64_t v;
      if (!parse_int(a[i + 1], v)) return reply_error(out, kNotInt);
      ++i;
      const bool seconds = eq_nocase(opt, "ex") || eq_nocase(opt, "exat");
      const bool absolute = eq_nocase(opt, "exat") || eq_nocase(opt, "pxat");
      constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
      if (v <= 0 || (seconds && v > kMax / 1000)) {
        return reply_error(out, "ERR invalid expire time in 'set' command");
      }
      const std::int64_t ms = seconds ? v * 1000 : v;
      if (!absolute && ms > kMax - now) {
        return reply_error(out, "ERR invalid expire time in 'set' command");
      }
      expire_at = absolute ? ms : now + ms;
      has_expiry = true;
    } else {
      return reply_error(out, kSyntax);
    }
  }
  std::lock_guard<spindle::Mutex> lock(db_.mutex());
  Entry* e = db_.find(a[1], now);
  if (get_old) {
    if (e) {
      reply_bulk(out, e->value);
    } else {
      reply_nil(out);
    }
  }
  if ((cond == kNx && e) || (cond == kXx && !e)) {
    if (!get_old) reply_nil(out);
    return;
  }
  if (keep_ttl && e) expire_at = e->expire_at;
  // An absolute time already past deletes the key, as redis does.
  if (expire_at != 0 && expire_at <= now) {
    if (db_.erase(a[1])) log_.append_del(a[1]);
  } else {
    db_.set(a[1], a[2], expire_at);
    log_.append_set(a[1], a[2], expire_at);
  }
  if (!get_old) reply_simple(out, "OK");
}

void Commands::del(Args a, std::string& out) {
  std::int64_t n = 0;
  const UnixMs now = now_ms();
  std::lock_guard<spindle::Mutex> lock(db_.mutex());
  for (std::size_t i = 1; i < a.size(); ++i) {
    if (db_.find(a[i], now) && db_.erase(a[i])) {
      log_.append_del(a[i]);
      ++n;
    }
  }
  reply_int(out, n);
}

void Commands::exists(Args a, std::string& out) {
  std::int64_t n = 0;
  const UnixMs now = now_ms();
  std::lock_guard<spindle::Mutex> lock(db_.mutex());
  for (std::size_t i = 1; i < a.size(); ++i) n += db_.find(a[i], now) ? 1 : 0;
  reply_int(out, n);
}

void Commands::incr_by(Args a, std::string& out, std::int64_t sign, bool parse_arg) {
  std::int64_t by = 1;
  if (parse_arg && !parse_int(a[2], by)) return reply_error(out, kNotInt);
  if (sign < 0) {
    if (by == std::numeric_limits<std::int64_t>::min()) {
      return reply_error(out, "ERR decrement would overflow");
    }
    by = -by;
  }
  const UnixMs now = now_ms();
  std::lock_guard<spindle::Mutex> lock(db_.mutex());
  Entry* e = db_.find(a[1], now);
  std::int64_t v = 0;
  if (e && !parse_int(e->value, v)) return reply_error(out, kNotInt);
  std::int64_t result;
  if (__builtin_add_overflow(v, by, &result)) {
    return reply_error(out, "ERR increment or decrement would overflow");
  }
  char buf[24];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, result);
  const std::string_view text(buf, static_cast<std::size_t>(p - buf));
  const UnixMs keep = e ? e->expire_at : 0;  // INCR keeps the TTL
  db_.set(a[1], text, keep);
  log_.append_set(a[1], text, keep);
  reply_int(out, result);
}

void Commands::mget(Args a, std::string& out) {
  const UnixMs now = now_ms();
  reply_array(out, a.size() - 1);
  std::lock_guard<spindle::Mutex> lock(db_.mutex());
  for (std::size_t i = 1; i < a.size(); ++i) {
    if (const Entry* e = db_.find(a[i], now)) {
      reply_bulk(out, e->value);
    } else {
      reply_nil(out);
    }
  }
}

void Commands::mset(Args a, std::string& out) {
  if (a.size() % 2 != 1) return wrong_args(out, a[0]);
  std::lock_guard<spindle::Mutex> lock(db_.mutex());
  for (std::size_t i = 1; i < a.size(); i += 2) {
    db_.set(a[i], a[i + 1], 0);
    log_.append_set(a[i], a[i + 1], 0);
  }
  reply_simple(out, "OK");
}

void Commands::expire(Args a, std::string& out, bool ms) {
  if (a.size() != 3)
    return reply_error(out, "ERR Unsupported option " + std::string(a.size() > 3 ? a[3] : ""));
  std::int64_t v;
  if (!parse_int(a[2], v)) return reply_error(out, kNotInt);
  const UnixMs now = now_ms();
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  const std::string msg =
      std::string("ERR invalid expire time in '") + (ms ? "pexpire" : "expire") + "' command";
  if (!ms && (v > kMax / 1000 || v < std::numeric_limits<std::int64_t>::min() / 1000)) {
    return reply_error(out, msg);
  }
  const std::int64_t delta = ms ? v : v * 1000;
  UnixMs at;
  if (__builtin_add_overflow(now, delta, &at)) return reply_error(out, msg);
  std::lock_guard<spindle::Mutex> lock(db_.mutex());
  Entry* e = db_.find(a[1], now);
  if (!e) return reply_int(out, 0);
  if (at <= now) {
    db_.erase(a[1]);
    log_.append_del(a[1]);
  } else {
    db_.set_expire(a[1], *e, at);
    log_.append_expire(a[1], at);
  }
  reply_int(out, 1);
}

void Commands::ttl(Args a, std::string& out, bool ms) {
  const UnixMs now = now_ms();
  std::lock_guard<spindle::Mutex> lock(db_.mutex());
  const Entry* e = db_.find(a[1], now);
  if (!e) return reply_int(out, -2);
  if (e->expire_at == 0) return reply_int(out, -1);
  const std::int64_t left = e->expire_at - now;
  reply_int(out, ms ? left : (left + 500) / 1000);
}

void Commands::dbsize(Args, std::string& out) {
  std::lock_guard<spindle::Mutex> lock(db_.mutex());
  reply_int(out, static_cast<std::int64_t>(db_.size()));
}

void Commands::flushall(Args a, std::string& out) {
  if (a.size() > 2 || (a.size() == 2 && !eq_nocase(a[1], "async") && !eq_nocase(a[1], "sync"))) {
    return reply_error(out, kSyntax);
  }
  std::lock_guard<spindle::Mutex> lock(db_.mutex());
  db_.clear();
  log_.append_flush();
  reply_simple(out, "OK");
}

void Commands::keys(Args a, std::string& out) {
  std::string body;
  std::size_t n = 0;
  {
    std::lock_guard<spindle::Mutex> lock(db_.mutex());
    const bool all = a[1] == "*";
    db_.for_each(now_ms(), [&](const std::string& k, const Entry&) {
      if (all || glob_match(a[1], k)) {
        reply_bulk(body, k);
        ++n;
      }
    });
  }
  reply_array(out, n);
  out += body;
}

void Commands::command(Args a, std::string& out) {
  auto info = [&](const Spec& s) {
    reply_array(out, 6);
    reply_bulk(out, s.name);
    reply_int(out, s.arity);
    reply_array(out, 0);  // flags
    reply_int(out, s.first_key);
    reply_int(out, s.last_key);
    reply_int(out, s.step);
  };
  if (a.size() == 1) {
    reply_array(out, std::size(kSpecs));
    for (const Spec& s : kSpecs) info(s);
    return;
  }
  if (eq_nocase(a[1], "count")) return reply_int(out, static_cast<std::int64_t>(std::size(kSpecs)));
  if (eq_nocase(a[1], "docs")) return reply_array(out, 0);  // redis-cli asks; no docs here
  if (eq_nocase(a[1], "info")) {
    reply_array(out, a.size() - 2);
    for (std::size_t i = 2; i < a.size(); ++i) {
      const Spec* found = nullptr;
      for (const Spec& s : kSpecs) {
        if (eq_nocase(a[i], s.name)) found = &s;
      }
      if (found) {
        info(*found);
      } else {
        out += "*-1\r\n";
      }
    }
    return;
  }
  reply_error(
      out, "ERR unknown subcommand '" + std::string(a[1].substr(0, 64)) + "'. Try COMMAND HELP.");
}

void Commands::config(Args a, std::string& out) {
  // Enough for redis-benchmark, which asks for "save" and "appendonly".
  if (!eq_nocase(a[1], "get") || a.size() < 3) {
    return reply_error(out, "ERR CONFIG " + std::string(a[1].substr(0, 64)) +
                                " is not supported by spindle-kv (only CONFIG GET)");
  }
  const char* fsync = policy_ == FsyncPolicy::kAlways     ? "always"
                      : policy_ == FsyncPolicy::kEverysec ? "everysec"
                                                          : "no";
  const std::pair<std::string_view, std::string_view> known[] = {
      {"save", ""}, {"appendonly", "yes"}, {"appendfsync", fsync}, {"databases", "1"}};
  std::string body;
  std::size_t n = 0;
  for (std::size_t i = 2; i < a.size(); ++i) {
    for (const auto& [k, v] : known) {
      if (glob_match(a[i], k)) {
        reply_bulk(body, k);
        reply_bulk(body, v);
        n += 2;
      }
    }
  }
  reply_array(out, n);
  out += body;
}

void Commands::select(Args a, std::string& out) {
  std::int64_t db;
  if (!parse_int(a[1], db)) return reply_error(out, kNotInt);
  if (db != 0) return reply_error(out, "ERR DB index is out of range");
  reply_simple(out, "OK");
}

}  // namespace kv
