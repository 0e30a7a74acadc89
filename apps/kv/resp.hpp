// RESP2: an incremental request parser (multibulk and inline commands, with
// limits) and the reply encoders. No I/O here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kv {

struct Limits {
  std::size_t max_bulk = std::size_t{512} << 20;  // bytes of one argument
  std::size_t max_array = 1024 * 1024;            // arguments of one command
  std::size_t max_inline = 64 * 1024;             // bytes of an inline command or a count line
};

// Parses commands out of a connection's input buffer. The parse of a command
// may span several calls (bytes arrive in pieces); its progress is kept here,
// as offsets from the command's first byte, so the caller may move the
// unconsumed bytes (the command included) to the front of its buffer between
// calls, but must not change them. Not thread-safe (one per connection).
class Parser {
 public:
  enum class Status { kCommand, kNeedMore, kError };
  struct Result {
    Status status;
    // kCommand: bytes of input the command took (the caller drops them after
    // running it). kNeedMore: the input must grow to at least this many bytes
    // before the next call can progress. Not used for kError.
    std::size_t size = 0;
  };

  explicit Parser(Limits limits) : limits_(limits) {}

  // Looks at `in`, which starts at the first byte of the next command. On
  // kCommand, `argv` holds its arguments (views into `in`, or into this
  // parser for unescaped inline arguments), valid until the next call; it may
  // be empty (an empty line, "*0"), which is no command. On kError, error()
  // says what is wrong, as a RESP error message; the connection must close.
  Result parse(std::string_view in, std::vector<std::string_view>& argv);

  const std::string& error() const noexcept { return error_; }

 private:
  Result fail(std::string msg);
  Result parse_inline(std::string_view in, std::vector<std::string_view>& argv);

  Limits limits_;
  std::string error_;
  // Progress within a multibulk command (all offsets from its first byte).
  bool in_multibulk_ = false;
  std::size_t remaining_ = 0;  // arguments still to parse
  std::size_t pos_ = 0;        // where the next argument's '$' line starts
  std::vector<std::pair<std::size_t, std::size_t>> args_;  // offset, length
  std::size_t scanned_ = 0;  // inline: bytes already searched for '\n'
  std::vector<std::string> inline_args_;
};

// Reply encoders: each appends one RESP2 value to `out`.
void reply_simple(std::string& out, std::string_view s);   // +s
void reply_error(std::string& out, std::string_view msg);  // -msg
void reply_int(std::string& out, std::int64_t v);          // :v
void reply_bulk(std::string& out, std::string_view s);     // $len s
void reply_nil(std::string& out);                          // $-1
void reply_array(std::string& out, std::size_t n);         // *n (then n values)

}  // namespace kv
