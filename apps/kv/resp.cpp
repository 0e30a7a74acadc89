// The RESP2 parser and encoders. The parser follows redis's
// processMultibulkBuffer/processInlineBuffer: the same limits and messages,
// so clients see what redis-server would tell them.
#include "resp.hpp"

#include <charconv>
#include <cstring>

namespace kv {
namespace {

// A strict decimal integer: optional '-', digits, nothing else.
bool parse_count(std::string_view s, long long& out) {
  if (s.empty()) return false;
  const char* b = s.data();
  const char* e = s.data() + s.size();
  if (*b == '+') return false;
  auto [p, ec] = std::from_chars(b, e, out);
  return ec == std::errc() && p == e;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// redis's sdssplitargs: whitespace-separated words, "double quoted" with
// backslash escapes (\n \r \t \b \a \\ \" \xHH), 'single quoted' with \'.
// A closing quote must be followed by whitespace or the end. False on
// unbalanced quotes.
bool split_args(std::string_view line, std::vector<std::string>& out) {
  out.clear();
  std::size_t i = 0;
  const std::size_t n = line.size();
  for (;;) {
    while (i < n && is_space(line[i])) ++i;
    if (i == n) return true;
    std::string cur;
    bool in_dq = false, in_sq = false, done = false;
    while (!done) {
      if (in_dq) {
        if (i == n) return false;
        if (line[i] == '\\' && i + 3 < n && line[i + 1] == 'x' && hex_digit(line[i + 2]) >= 0 &&
            hex_digit(line[i + 3]) >= 0) {
          cur += static_cast<char>(hex_digit(line[i + 2]) * 16 + hex_digit(line[i + 3]));
          i += 3;
        } else if (line[i] == '\\' && i + 1 < n) {
          ++i;
          switch (line[i]) {
            case 'n':
              cur += '\n';
              break;
            case 'r':
              cur += '\r';
              break;
            case 't':
              cur += '\t';
              break;
            case 'b':
              cur += '\b';
              break;
            case 'a':
              cur += '\a';
              break;
            default:
              cur += line[i];
              break;
          }
        } else if (line[i] == '"') {
          if (i + 1 < n && !is_space(line[i + 1])) return false;
          done = true;
        } else {
          cur += line[i];
        }
      } else if (in_sq) {
        if (i == n) return false;
        if (line[i] == '\\' && i + 1 < n && line[i + 1] == '\'') {
          ++i;
          cur += '\'';
        } else if (line[i] == '\'') {
          if (i + 1 < n && !is_space(line[i + 1])) return false;
          done = true;
        } else {
          cur += line[i];
        }
      } else {
        if (i == n) {
          done = true;
          break;
        }
        switch (line[i]) {
          case ' ':
          case '\n':
          case '\r':
          case '\t':
          case '\0':
            done = true;
            break;
          case '"':
            in_dq = true;
            break;
          case '\'':
            in_sq = true;
            break;
          default:
            cur += line[i];
            break;
        }
      }
      if (i < n) ++i;
    }
    out.push_back(std::move(cur));
  }
}

}  // namespace

Parser::Result Parser::fail(std::string msg) {
  error_ = "ERR Protocol error: " + std::move(msg);
  in_multibulk_ = false;
  return {Status::kError};
}

Parser::Result Parser::parse(std::string_view in, std::vector<std::string_view>& argv) {
  argv.clear();
  if (!in_multibulk_) {
    if (in.empty()) return {Status::kNeedMore, 1};
    if (in[0] != '*') return parse_inline(in, argv);
    // The count line.
    const std::size_t nl = in.find("\r\n", 0);
    if (nl == std::string_view::npos || nl > limits_.max_inline) {
      if (in.size() > limits_.max_inline) return fail("too big mbulk count string");
      return {Status::kNeedMore, in.size() + 1};
    }
    long long count;
    if (!parse_count(in.substr(1, nl - 1), count) ||
        count > static_cast<long long>(limits_.max_array))
      return fail("invalid multibulk length");
    if (count <= 0) return {Status::kCommand, nl + 2};  // no command
    in_multibulk_ = true;
    remaining_ = static_cast<std::size_t>(count);
    pos_ = nl + 2;
    args_.clear();
    args_.reserve(std::min<std::size_t>(remaining_, 1024));
  }
  while (remaining_ > 0) {
    if (pos_ >= in.size()) return {Status::kNeedMore, pos_ + 1};
    if (in[pos_] != '$') {
      std::string got(1, in[pos_]);
      return fail("expected '$', got '" + got + "'");
    }
    const std::size_t nl = in.find("\r\n", pos_);
    if (nl == std::string_view::npos || nl - pos_ > limits_.max_inline) {
      if (in.size() - pos_ > limits_.max_inline) return fail("too big bulk count string");
      return {Status::kNeedMore, in.size() + 1};
    }
    long long len;
    if (!parse_count(in.substr(pos_ + 1, nl - pos_ - 1), len) || len < 0 ||
        static_cast<unsigned long long>(len) > limits_.max_bulk)
      return fail("invalid bulk length");
    const std::size_t start = nl + 2;
    const std::size_t end = start + static_cast<std::size_t>(len) + 2;  // with its CRLF
    if (in.size() < end) return {Status::kNeedMore, end};
    args_.emplace_back(start, static_cast<std::size_t>(len));
    pos_ = end;
    --remaining_;
  }
  in_multibulk_ = false;
  argv.reserve(args_.size());
  for (auto [off, len] : args_) argv.push_back(in.substr(off, len));
  return {Status::kCommand, pos_};
}

Parser::Result Parser::parse_inline(std::string_view in, std::vector<std::string_view>& argv) {
  const std::size_t nl = in.find('\n', scanned_);
  if (nl == std::string_view::npos) {
    if (in.size() > limits_.max_inline) {
      scanned_ = 0;
      return fail("too big inline request");
    }
    scanned_ = in.size();
    return {Status::kNeedMore, in.size() + 1};
  }
  scanned_ = 0;
  std::string_view line = in.substr(0, nl);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (!split_args(line, inline_args_)) return fail("unbalanced quotes in request");
  for (const auto& a : inline_args_) argv.push_back(a);
  return {Status::kCommand, nl + 1};
}

void reply_simple(std::string& out, std::string_view s) {
  out += '+';
  out += s;
  out += "\r\n";
}

void reply_error(std::string& out, std::string_view msg) {
  out += '-';
  out += msg;
  out += "\r\n";
}

namespace {
void append_prefixed(std::string& out, char prefix, std::int64_t v) {
  char buf[24];
  buf[0] = prefix;
  auto [p, ec] = std::to_chars(buf + 1, buf + sizeof buf - 2, v);
  *p++ = '\r';
  *p++ = '\n';
  out.append(buf, static_cast<std::size_t>(p - buf));
}
}  // namespace

void reply_int(std::string& out, std::int64_t v) { append_prefixed(out, ':', v); }

void reply_bulk(std::string& out, std::string_view s) {
  append_prefixed(out, '$', static_cast<std::int64_t>(s.size()));
  out += s;
  out += "\r\n";
}

void reply_nil(std::string& out) { out += "$-1\r\n"; }

void reply_array(std::string& out, std::size_t n) {
  append_prefixed(out, '*', static_cast<std::int64_t>(n));
}

}  // namespace kv
