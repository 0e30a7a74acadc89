// Commands: runs one parsed RESP command against the keyspace, logging every
// change, and appends the reply.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "db.hpp"
#include "log.hpp"
#include "resp.hpp"

namespace kv {

// Per connection.
struct Session {
  bool close = false;  // QUIT: close after the replies so far
};

// Thread-safe (every command runs under the keyspace's mutex).
class Commands {
 public:
  Commands(Db& db, Log& log, FsyncPolicy policy) : db_(db), log_(log), policy_(policy) {}

  // Runs `argv` (non-empty) and appends its reply to `out`.
  // Suspends: on the keyspace mutex only (never on I/O: the caller waits for
  // the log before sending the replies).
  void run(std::span<const std::string_view> argv, std::string& out, Session& session);

 private:
  using Args = std::span<const std::string_view>;
  void ping(Args a, std::string& out);
  void echo(Args a, std::string& out);
  void get(Args a, std::string& out);
  void set(Args a, std::string& out);
  void del(Args a, std::string& out);
  void exists(Args a, std::string& out);
  void incr_by(Args a, std::string& out, std::int64_t by, bool parse_arg);
  void mget(Args a, std::string& out);
  void mset(Args a, std::string& out);
  void expire(Args a, std::string& out, bool ms);
  void ttl(Args a, std::string& out, bool ms);
  void dbsize(Args a, std::string& out);
  void flushall(Args a, std::string& out);
  void keys(Args a, std::string& out);
  void command(Args a, std::string& out);
  void config(Args a, std::string& out);
  void select(Args a, std::string& out);

  Db& db_;
  Log& log_;
  FsyncPolicy policy_;
};

// redis's glob (stringmatchlen): * ? [abc] [^a-z] and \ escapes.
bool glob_match(std::string_view pattern, std::string_view s);

}  // namespace kv
