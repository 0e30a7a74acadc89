// Fuzzes spindle-kv's RESP2 parser (apps/kv/resp.hpp): inline and multibulk
// commands, driven the way kv::serve() (server.cpp) drives it: read until the
// parser's `need` is met, parse commands until kNeedMore, move the unconsumed
// bytes to the front. The input is what a client sends; it is parsed with the
// server's default limits and with tiny ones (to reach every limit), each in
// pseudo-random pieces and all at once. Checks: kNeedMore asks for more than
// it was given (else the server would spin), a command takes at least one and
// at most the given bytes, multibulk arguments lie within the command and
// within the limits, both deliveries agree on the commands they share and,
// without an error, on all of them, and every command survives a round trip
// through the reply encoders (reply_array + reply_bulk) and the parser.
#include "resp.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chunks.hpp"

namespace {

using spindle::fuzz::Chunks;

struct Outcome {
  std::vector<std::vector<std::string>> commands;
  bool error = false;
};

// The command encoded as a client library sends it, parsed back.
void round_trip(const std::vector<std::string>& argv) {
  std::string wire;
  kv::reply_array(wire, argv.size());
  for (const auto& a : argv) kv::reply_bulk(wire, a);
  kv::Parser parser(kv::Limits{});
  std::vector<std::string_view> back;
  const auto r = parser.parse(wire, back);
  SPINDLE_FUZZ_CHECK(r.status == kv::Parser::Status::kCommand);
  SPINDLE_FUZZ_CHECK(r.size == wire.size());
  SPINDLE_FUZZ_CHECK(back.size() == argv.size());
  for (std::size_t i = 0; i < argv.size(); ++i) SPINDLE_FUZZ_CHECK(back[i] == argv[i]);
}

Outcome serve(std::string_view input, const kv::Limits& limits, bool whole) {
  Chunks chunks(input);
  kv::Parser parser(limits);
  std::string in;        // input not yet run, from a command's start
  std::size_t need = 1;  // bytes the parser needs before it can progress
  std::vector<std::string_view> argv;
  Outcome out;
  for (;;) {
    while (in.size() < need) {
      if (chunks.done()) return out;  // the client stopped sending
      in.append(whole ? chunks.next_all() : chunks.next());
    }
    std::size_t start = 0;
    for (;;) {
      const std::string_view view(in.data() + start, in.size() - start);
      const auto r = parser.parse(view, argv);
      if (r.status == kv::Parser::Status::kNeedMore) {
        SPINDLE_FUZZ_CHECK(r.size > view.size());
        need = r.size;
        break;
      }
      if (r.status == kv::Parser::Status::kError) {
        SPINDLE_FUZZ_CHECK(parser.error().starts_with("ERR Protocol error: "));
        out.error = true;
        return out;
      }
      SPINDLE_FUZZ_CHECK(r.size > 0 && r.size <= view.size());
      if (view[0] == '*') {
        SPINDLE_FUZZ_CHECK(argv.size() <= limits.max_array);
        for (const auto a : argv) {
          SPINDLE_FUZZ_CHECK(a.size() <= limits.max_bulk);
          SPINDLE_FUZZ_CHECK(a.data() >= view.data() &&
                             a.data() + a.size() <= view.data() + r.size);
        }
      }
      if (!argv.empty()) {
        out.commands.emplace_back(argv.begin(), argv.end());
        round_trip(out.commands.back());
      }
      start += r.size;
    }
    in.erase(0, start);
  }
}

void check(std::string_view input, const kv::Limits& limits) {
  const Outcome pieces = serve(input, limits, false);
  const Outcome once = serve(input, limits, true);
  const std::size_t common = std::min(pieces.commands.size(), once.commands.size());
  for (std::size_t i = 0; i < common; ++i)
    SPINDLE_FUZZ_CHECK(pieces.commands[i] == once.commands[i]);
  // An error may come sooner when the input arrives in pieces (an inline
  // command longer than max_inline fails before its newline arrives, as in
  // redis), never later.
  if (once.error) SPINDLE_FUZZ_CHECK(pieces.error);
  if (!pieces.error && !once.error) SPINDLE_FUZZ_CHECK(pieces.commands == once.commands);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  check(input, kv::Limits{});  // the server's defaults (main.cpp)
  check(input, kv::Limits{.max_bulk = 64, .max_array = 16, .max_inline = 64});
  return 0;
}
