#include "server.hpp"

#include <cstring>
#include <vector>

namespace kv {
namespace {

using spindle::net::Timeout;

constexpr std::size_t kReadSize = 64 * 1024;  // at least this much room per read
constexpr std::size_t kFlushAt = 1 << 20;     // send replies mid-batch beyond this

// Sets the size of `s` without writing the bytes it adds: an idle connection
// keeps resident only the pages its reads touched, not its whole buffer.
void resize_unwritten(std::string& s, std::size_t n) {
  s.resize_and_overwrite(n, [](char*, std::size_t size) { return size; });
}

// Sends the replies once the log covers every change so far.
bool flush(spindle::net::TcpStream& stream, Log& log, std::string& out) {
  if (out.empty()) return true;
  if (!log.wait(log.appended())) return false;  // aborted: shutting down
  if (!stream.write_all(out)) return false;
  out.clear();
  return true;
}

// The deadline of the next read: `idle` from now between commands, else
// `command` from when the unfinished command's first byte arrived.
spindle::Deadline read_deadline(const Timeouts& timeouts, bool mid_command,
                                spindle::Deadline command_began) {
  const auto limit = mid_command ? timeouts.command : timeouts.idle;
  if (limit.count() == 0) return spindle::kNoDeadline;
  return (mid_command ? command_began : spindle::Clock::now()) + limit;
}

}  // namespace

void serve(spindle::net::TcpStream& stream, Commands& commands, Log& log, const Limits& limits,
           const Timeouts& timeouts) {
  const Log::Client client(log);
  Parser parser(limits);
  std::string in;
  resize_unwritten(in, kReadSize);
  std::size_t len = 0;   // in[0, len) is input not yet run, from a command's start
  std::size_t need = 1;  // bytes the parser needs before it can progress
  std::string out;
  std::vector<std::string_view> argv;
  Session session;
  spindle::Deadline command_began{};  // when in[0]'s command began to arrive, if len > 0
  spindle::Deadline last_read{};
  for (;;) {
    while (len < need) {
      const std::size_t want = std::max(need, len + kReadSize);
      if (in.size() < want) resize_unwritten(in, std::max(want, in.size() * 2));
      const auto deadline = read_deadline(timeouts, len > 0, command_began);
      auto n = stream.read(std::span(in.data() + len, in.size() - len), Timeout::at(deadline));
      if (!n || *n == 0) return;  // closed, timed out, reset or aborted
      last_read = spindle::Clock::now();
      if (len == 0) command_began = last_read;
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
    // That command began in the last read at the earliest.
    if (start > 0) {
      std::memmove(in.data(), in.data() + start, len - start);
      len -= start;
      if (session.close) len = 0;
      command_began = last_read;
    }
    if (!flush(stream, log, out) || session.close) return;
    // Give back the memory of a huge request once it is done.
    if (len == 0 && in.size() > 4 * kReadSize) {
      resize_unwritten(in, kReadSize);
      in.shrink_to_fit();
    }
  }
}

}  // namespace kv
