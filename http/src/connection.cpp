#include "connection.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <string>

#include "spindle/http/error.hpp"
#include "spindle/net/resolve.hpp"
#include "spindle/sched/this_fiber.hpp"

namespace spindle::http::detail {
namespace {

namespace beast_http = boost::beast::http;

// The most a reply's status line and headers may take. The stream's buffer
// must hold them whole (a TlsStream's holds one record, 16 KiB).
constexpr std::uint32_t kHeaderLimit = 16 * 1024;

std::error_code parse_error(const boost::beast::error_code& ec) {
  if (ec == beast_http::error::body_limit) return errc::body_too_large;
  if (ec == beast_http::error::header_limit) return errc::header_too_large;
  if (ec == beast_http::error::partial_message) return errc::closed_early;
  return errc::malformed_response;
}

Response to_response(beast_http::response<beast_http::string_body>&& message) {
  Response r;
  r.status = static_cast<int>(message.result_int());
  r.reason = std::string(message.reason());
  r.version = static_cast<int>(message.version());
  for (const auto& field : message)
    r.headers.push_back({std::string(field.name_string()), std::string(field.value())});
  r.body = std::move(message.body());
  return r;
}

// One reply, parsed in place from the stream's buffer (peek/consume).
template <class Stream>
Result<Response> read_reply(Stream& stream, bool head, std::size_t body_limit, Deadline deadline,
                            ReplyState& state) {
  for (;;) {
    beast_http::response_parser<beast_http::string_body> parser;
    parser.header_limit(kHeaderLimit);
    parser.body_limit(body_limit);
    parser.skip(head);
    // The headers first, alone (not eager): Beast 1.74 lets a Content-Length
    // body past its body_limit when the whole message is in one buffer, so
    // the length is checked here before the body is parsed.
    while (!parser.is_done()) {
      if (const auto data = stream.peek(); !data.empty()) {
        state.received = true;
        boost::beast::error_code ec;
        const std::size_t used =
            parser.put(boost::asio::const_buffer(data.data(), data.size()), ec);
        stream.consume(used);
        if (parser.is_done()) break;
        if (ec && ec != beast_http::error::need_more) return failure(parse_error(ec));
        if (parser.is_header_done() && !parser.eager()) {
          if (const auto length = parser.content_length(); length && *length > body_limit)
            return failure(errc::body_too_large);
          parser.eager(true);
        }
        // Headers or part of the body were taken and more is buffered: parse on.
        if (!ec && used > 0 && !stream.peek().empty()) continue;
      }
      auto n = stream.fill(net::Timeout::at(deadline));
      if (!n) {
        if (n.error() == std::errc::no_buffer_space) return failure(errc::header_too_large);
        return failure(n.error());
      }
      if (*n == 0) {  // end of stream: the end of a body read until close, or too early
        // Before any byte of the reply: a pooled connection the server had
        // closed (Beast would take its end as an empty reply).
        if (!parser.got_some()) return failure(errc::closed_early);
        boost::beast::error_code ec;
        parser.put_eof(ec);
        if (ec) return failure(parse_error(ec));
        break;
      }
    }
    const int status = static_cast<int>(parser.get().result_int());
    if (status / 100 == 1 && status != 101) continue;  // an interim reply: the real one follows
    state.reusable = parser.get().keep_alive() && !parser.need_eof() && stream.peek().empty();
    return to_response(parser.release());
  }
}

}  // namespace

Result<Connection> Connection::open(const Url& url, const tls::Context* tls, Deadline deadline) {
  auto addresses =
      this_fiber::with_deadline(deadline, [&] { return net::resolve(url.host, url.port); });
  if (!addresses) return failure(addresses.error());
  Result<net::TcpStream> tcp = failure(spindle::errc::closed);
  for (const auto& address : *addresses) {
    tcp = net::TcpStream::connect(address, net::Timeout::at(deadline));
    if (tcp || tcp.error() == spindle::errc::timed_out || tcp.error() == spindle::errc::aborted)
      break;
  }
  if (!tcp) return failure(tcp.error());
  if (!url.https) return Connection(std::move(*tcp));
  auto secure =
      tls::TlsStream::connect(*tls, std::move(*tcp), url.host, net::Timeout::at(deadline));
  if (!secure) return failure(secure.error());
  return Connection(std::move(*secure));
}

Result<void> Connection::send(std::string_view head, std::string_view body, Deadline deadline) {
  return std::visit(
      [&](auto& stream) -> Result<void> {
        const auto timeout = net::Timeout::at(deadline);
        if (auto sent = stream.write_all(head, timeout); !sent) return sent;
        if (body.empty()) return {};
        return stream.write_all(body, timeout);
      },
      stream_);
}

Result<Response> Connection::receive(bool head, std::size_t body_limit, Deadline deadline,
                                     ReplyState& state) {
  return std::visit(
      [&](auto& stream) { return read_reply(stream, head, body_limit, deadline, state); }, stream_);
}

}  // namespace spindle::http::detail
