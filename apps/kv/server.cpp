#include "server.hpp"

#include <cstring>
#include <vector>

namespace kv {
namespace {

using spindle::net::Timeout;

constexpr std::size_t kReadSize = 64 * 1024;  // at least this much room per read
constexpr std::size_t kFlushAt = 1 << 20;     // send replies mid-batch beyond this

// Sends the replies once the log covers every change so far.
bool flush(spindle::net::TcpStream& stream, Log& log, std::string& out) {
  if (out.empty()) return true;
  if (!log.wait(log.appended())) return false;  // aborted: shutting down
  if (!stream.write_all(out)) return false;
  out.clear();
  return true;
}

}  // namespace

void serve(spindle::net::TcpStream stream, Commands& commands, Log& log, const Limits& limits) {
  Parser parser(limits);
  std::string in(kReadSize, '\0');
  std::size_t len = 0;   // in[0, len) is input not yet run, from a command's start
  std::size_t need = 1;  // bytes the parser needs before it can progress
  std::string out;
  std::vector<std::string_view> argv;
  Session session;
  for (;;) {
    while (len < need) {
      const std::size_t want = std::max(need, len + kReadSize);
      if (in.size() < want) in.resize(std::max(want, in.size() * 2));
      // Idle clients may stay connected for ever, as with redis's default.
      auto n = stream.read(std::span(in.data() + len, in.size() - len), Timeout::never());
      if (!n || *n == 0) return;
      len += *n;
    }
    std::size_t start = 0;
    for (;;) {
      const auto r = parser.parse(std::string_view(in.data() + start, len - start), argv);
      if (r.status == Parser::Status::kNeedMore) {
        need = r.size;
        break;
      }
      if (r.status == Parser::Status::kError) {
        reply_error(out, parser.error());
        if (flush(stream, log, out)) {
          // Let the client read the error before the connection goes.
          (void)stream.shutdown(spindle::net::Shutdown::kWrite);
          char drain[4096];
          const auto deadline = spindle::Clock::now() + std::chrono::seconds(1);
          while (spindle::Clock::now() < deadline) {
            auto n = stream.read(std::span(drain), Timeout::at(deadline));
            if (!n || *n == 0) break;
          }
        }
        return;
      }
      if (!argv.empty()) commands.run(argv, out, session);
      start += r.size;
      if (session.close) break;
      if (out.size() >= kFlushAt && !flush(stream, log, out)) return;
    }
    // Keep the unconsumed bytes (the start of the next command) at the front.
    if (start > 0) {
      std::memmove(in.data(), in.data() + start, len - start);
      len -= start;
      if (session.close) len = 0;
    }
    if (!flush(stream, log, out) || session.close) return;
    // Give back the memory of a huge request once it is done.
    if (len == 0 && in.size() > 4 * kReadSize) {
      in.resize(kReadSize);
      in.shrink_to_fit();
    }
  }
}

}  // namespace kv
