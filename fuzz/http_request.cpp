// Fuzzes spindle-http's request path: RequestParser (Beast's HTTP/1 parser,
// apps/http/request_parser.hpp) driven the way serve() in connection.cpp
// drives it, with the server's default limits, one parser per request on a
// keep-alive connection. The input is the byte stream a client sends; it is
// parsed twice, delivered in pseudo-random pieces and all at once, and both
// runs must see the same requests and, unless the input stops inside a bad
// header, end alike: both in an error (not always the same one), or neither.
// Checks: put() never consumes more than it is given, a finished request has
// its header done, the route agrees with the request line, and no piece of
// the input makes the loop spin without consuming or reading.
#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chunks.hpp"
#include "request_parser.hpp"

namespace {

using spindle::apps::http::RequestParser;
using spindle::apps::http::Route;
using spindle::fuzz::Chunks;
namespace beast_http = boost::beast::http;

// ServerOptions' defaults (apps/http/connection.hpp).
constexpr std::uint32_t kHeaderLimit = 8 * 1024;
constexpr std::uint64_t kBodyLimit = 1024 * 1024;

struct Request {
  Route route;
  bool head;
  int version;
  bool keep_alive;
  bool expects_continue;
  bool operator==(const Request&) const = default;
};

struct Outcome {
  std::vector<Request> requests;
  std::string error;  // the parse error that ends the connection, empty if none
  bool cut = false;   // the input ended in the middle of a request
};

// `whole`: deliver the input in one piece, else in Chunks' pieces.
Outcome serve(std::string_view input, bool whole) {
  Chunks chunks(input);
  auto read = [&]() -> std::string_view { return whole ? chunks.next_all() : chunks.next(); };
  std::string buf;  // received, not yet consumed
  Outcome out;
  for (;;) {
    RequestParser parser;
    parser.header_limit(kHeaderLimit);
    parser.body_limit(kBodyLimit);
    parser.eager(true);
    while (!parser.is_done()) {
      if (!buf.empty()) {
        boost::beast::error_code ec;
        const std::size_t used = parser.put(boost::asio::const_buffer(buf.data(), buf.size()), ec);
        SPINDLE_FUZZ_CHECK(used <= buf.size());
        buf.erase(0, used);
        if (parser.is_done()) break;
        if (ec && ec != beast_http::error::need_more) {
          out.error = ec.message();
          SPINDLE_FUZZ_CHECK(!out.error.empty());
          return out;
        }
        if (!ec && used > 0 && !buf.empty()) continue;
      }
      if (chunks.done()) {  // the client stopped sending
        out.cut = !buf.empty() || parser.got_some();
        return out;
      }
      const std::string_view piece = read();
      SPINDLE_FUZZ_CHECK(!piece.empty());
      buf.append(piece);
    }
    SPINDLE_FUZZ_CHECK(parser.is_header_done());
    const Request r{parser.route(), parser.head(), parser.version(), parser.keep_alive(),
                    parser.expects_continue()};
    SPINDLE_FUZZ_CHECK(r.version >= 0 && r.version <= 99);  // HTTP/d.d
    SPINDLE_FUZZ_CHECK(!r.head || r.route != Route::kMethodNotAllowed);
    out.requests.push_back(r);
    if (!r.keep_alive) return out;  // the server answers and closes
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const Outcome pieces = serve(input, false);
  const Outcome once = serve(input, true);
  SPINDLE_FUZZ_CHECK(pieces.requests == once.requests);
  // Beast checks the fields of an incomplete header only when it was handed
  // the header's start in the same put() as the bad field, so an input that
  // ends inside a bad header may be an error in one delivery and merely cut
  // short in the other. And Beast 1.74 may report a bad chunk header
  // delivered in pieces as another error than delivered whole (seen: "body
  // limit exceeded", for a chunk of 965,333 bytes under the 1 MiB limit,
  // where the whole input says "bad chunk extension"). Either error closes
  // the connection. Otherwise both end alike.
  if (pieces.error.empty() != once.error.empty()) {
    SPINDLE_FUZZ_CHECK(pieces.error.empty() ? pieces.cut : once.cut);
  } else {
    SPINDLE_FUZZ_CHECK(pieces.cut == once.cut);
  }
  return 0;
}
