#include "connection.hpp"

#include <fcntl.h>

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <cerrno>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "request_parser.hpp"
#include "response.hpp"
#include "spindle/fs/copy.hpp"
#include "spindle/fs/splice_pipe.hpp"
#include "spindle/sched/runtime.hpp"

namespace spindle::apps::http {
namespace {

// Responses are flushed before a read would wait, and also once this much
// is pending (a client pipelining without reading).
constexpr std::size_t kFlushAt = 64 * 1024;
// After the last response: how long and how much to keep reading (and
// dropping) while the client notices the close.
constexpr auto kLingerTime = std::chrono::seconds(2);
constexpr std::size_t kLingerBytes = 4 * 1024 * 1024;
// A file served over TLS in user space is read and encrypted this much at a time.
constexpr std::size_t kFilePiece = 64 * 1024;

Status status_for(const boost::beast::error_code& ec) {
  if (ec == beast_http::error::header_limit) return Status::kHeaderFieldsTooLarge;
  if (ec == beast_http::error::body_limit) return Status::kPayloadTooLarge;
  return Status::kBadRequest;
}

Status status_for(Route r) {
  switch (r) {
    case Route::kHello:
    case Route::kMetrics:
      return Status::kOk;
    case Route::kMethodNotAllowed:
      return Status::kMethodNotAllowed;
    case Route::kFile:  // answered by respond_file()
    case Route::kNotFound:
      break;
  }
  return Status::kNotFound;
}

// Sends `out`, then closes our side first (FIN; over TLS, close_notify
// first) and drains what the client still sends until it closes too:
// closing with unread input (or, with zero linger, at once) would reset the
// connection and could destroy the response before the client read it.
template <class Stream>
void finish(Stream& stream, std::string& out) {
  if (!out.empty() && !stream.write_all(out)) return;
  if (!stream.shutdown(net::Shutdown::kWrite)) return;
  const auto deadline = net::Timeout::at(Clock::now() + kLingerTime);
  std::size_t drained = 0;
  while (drained < kLingerBytes) {
    stream.consume(stream.peek().size());
    auto n = stream.fill(deadline);
    if (!n || *n == 0) return;
    drained += *n;
  }
}

// The next read's timeout: `idle`, cut short by the request's own deadline
// once the request has begun.
net::Timeout read_timeout(const ServerOptions& options, const std::optional<Deadline>& began) {
  Deadline deadline = Clock::now() + options.idle_timeout;
  if (began && options.request_timeout.count() > 0)
    deadline = std::min(deadline, *began + options.request_timeout);
  return net::Timeout::at(deadline);
}

// A response's `head` and then its file's body, `size` bytes: spliced
// from the file straight into the socket through `pipe`, the
// connection's, in one packet with the head.
bool send_with_body(net::TcpStream& stream, std::string_view head, fs::File& file,
                    std::uint64_t size, fs::SplicePipe& pipe) {
  auto sent = fs::send_file(file, 0, size, stream.native_handle(),
                            {.pipe = &pipe, .header = std::as_bytes(std::span(head))});
  return sent && *sent == size;
}

// Over TLS the head goes through the stream; the body is spliced too where
// the kernel encrypts what the stream sends, otherwise read a piece at a
// time and encrypted by the stream.
bool send_with_body(tls::TlsStream& stream, std::string_view head, fs::File& file,
                    std::uint64_t size, fs::SplicePipe& pipe) {
  if (!stream.write_all(head)) return false;
  if (stream.kernel_offload()) {
    auto sent = fs::send_file(file, 0, size, stream.native_handle(), {.pipe = &pipe});
    return sent && *sent == size;
  }
  if (::fcntl(file.native_handle(), F_SETFL, 0) != 0) return false;  // see StaticFile::file
  const std::size_t piece = static_cast<std::size_t>(std::min<std::uint64_t>(size, kFilePiece));
  const auto buf = std::make_unique_for_overwrite<std::byte[]>(piece);
  for (std::uint64_t offset = 0; offset < size;) {
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(piece, size - offset));
    auto n = file.pread({buf.get(), want}, offset);
    if (!n || *n == 0) return false;  // an error, or the file shrank below its announced length
    if (!stream.write_all(std::span<const std::byte>(buf.get(), *n))) return false;
    offset += *n;
  }
  return true;
}

// Answers a request for the file at `path` under `root`: an error response
// into `out`; for a file, its headers, then (unless HEAD) `out` sent with
// the body (send_with_body, through `pipe`). False when the connection cannot go on:
// a send failed, or the file ended before the length its headers announced.
template <class Stream>
bool respond_file(Stream& stream, std::string& out, const StaticRoot& root, const std::string& path,
                  const ResponseShape& shape, fs::SplicePipe& pipe) {
  StaticFile found = root.find(path);
  if (found.status != Status::kOk) {
    append_response(out, found.status, shape);
    return true;
  }
  append_ok_head(out, found.content_type, found.size, shape);
  if (shape.head || found.size == 0) return true;
  const bool sent = send_with_body(stream, out, found.file, found.size, pipe);
  out.clear();
  return sent;
}

}  // namespace

template <class Stream>
void serve(Stream& stream, const ServerOptions& options) {
  std::string out;
  // Every body this connection splices goes through this one pipe: the
  // first such send makes it (a connection that sends no file has none),
  // and it closes with the connection. Only this fiber uses it.
  fs::SplicePipe pipe;
  for (;;) {
    // When this request's first byte arrived (at the latest), once it has.
    std::optional<Deadline> began;
    if (!stream.peek().empty()) began = Clock::now();
    RequestParser parser;
    parser.header_limit(options.header_limit);
    parser.body_limit(options.body_limit);
    parser.eager(true);
    if (options.root) parser.serve_files();
    bool continue_sent = false;
    // Parse one request from the buffered bytes, reading more as needed.
    while (!parser.is_done()) {
      if (const auto data = stream.peek(); !data.empty()) {
        boost::beast::error_code ec;
        const std::size_t used =
            parser.put(boost::asio::const_buffer(data.data(), data.size()), ec);
        stream.consume(used);
        if (parser.is_done()) break;
        if (ec && ec != beast_http::error::need_more) {
          append_response(out, status_for(ec), {.keep_alive = false});
          finish(stream, out);
          return;
        }
        // A body chunk was taken and more is buffered: parse on without reading.
        if (!ec && used > 0 && !stream.peek().empty()) continue;
      }
      // Everything buffered is parsed and more is needed: send what we owe
      // first (pipelined responses; the go-ahead a client waits for).
      if (parser.is_header_done() && parser.expects_continue() && !continue_sent) {
        append_continue(out);
        continue_sent = true;
      }
      if (!out.empty()) {
        if (!stream.write_all(out)) return;
        out.clear();
      }
      auto n = stream.fill(read_timeout(options, began));
      if (n && *n > 0 && !began) began = Clock::now();
      if (!n) {
        if (n.error() == std::errc::no_buffer_space) {  // a read buffer smaller than the limit
          append_response(out, Status::kHeaderFieldsTooLarge, {.keep_alive = false});
          finish(stream, out);
        }
        return;  // idle or request timeout, reset, abort: close
      }
      if (*n == 0) return;  // the client closed (between requests, or mid-request: no answer)
    }
    const bool keep_alive = parser.keep_alive();
    const ResponseShape shape{
        .keep_alive = keep_alive, .head = parser.head(), .http10 = parser.version() < 11};
    if (parser.route() == Route::kMetrics) {
      append_ok(out, "text/plain; version=0.0.4", current_runtime().metrics_text(), shape);
    } else if (parser.route() == Route::kFile) {
      if (!respond_file(stream, out, *options.root, parser.path(), shape, pipe)) return;
    } else {
      append_response(out, status_for(parser.route()), shape);
    }
    if (!keep_alive) {
      finish(stream, out);
      return;
    }
    if (out.size() >= kFlushAt) {
      if (!stream.write_all(out)) return;
      out.clear();
    }
  }
}

template void serve(net::TcpStream&, const ServerOptions&);
template void serve(tls::TlsStream&, const ServerOptions&);

}  // namespace spindle::apps::http
