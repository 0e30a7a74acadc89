// A scripted HTTP server on a fiber, for the client's tests: each connection
// runs a handler of the test's on a fiber of its own.
#pragma once

#include <string>
#include <utility>

#include "runtime_harness.hpp"

namespace spindle::test {

// Reads one request (its head through the blank line, and a Content-Length
// body) from `stream`; "" at end of stream or on an error. The client under
// test never pipelines, so whatever arrives belongs to this request.
template <class Stream>
std::string read_request(Stream& stream) {
  std::string request;
  std::size_t head_end;
  while ((head_end = request.find("\r\n\r\n")) == std::string::npos) {
    if (stream.peek().empty()) {
      auto n = stream.fill(std::chrono::seconds(10));
      if (!n || *n == 0) return "";
    }
    const auto data = stream.peek();
    request.append(reinterpret_cast<const char*>(data.data()), data.size());
    stream.consume(data.size());
  }
  std::size_t body = 0;
  if (const auto at = request.find("Content-Length: "); at != std::string::npos)
    body = std::stoul(request.substr(at + 16));
  while (request.size() < head_end + 4 + body) {
    std::string more(head_end + 4 + body - request.size(), '\0');
    if (!stream.read_exact(std::span<char>(more.data(), more.size()), std::chrono::seconds(10)))
      return "";
    request += more;
  }
  return request;
}

// A listener on 127.0.0.1 whose connections each run handler(stream) on a
// fiber of their own, until the calling fiber ends. Fiber-only.
class ScriptedServer {
 public:
  template <class Handler>
  explicit ScriptedServer(Handler handler)
      : listener_(net::TcpListener::bind(net::SocketAddress::loopback_v4()).value()),
        port_(listener_.local_addr().value().port()) {
    loop_ = spawn([this, handler]() mutable {
      while (auto conn = listener_.accept()) {
        spawn([handler, stream = std::move(*conn)]() mutable { handler(stream); });
      }
    });
  }
  ~ScriptedServer() {
    loop_.abort();
    (void)loop_.join();
  }

  std::string url(const std::string& path = "/", const char* scheme = "http") const {
    return std::string(scheme) + "://127.0.0.1:" + std::to_string(port_) + path;
  }

 private:
  net::TcpListener listener_;
  std::uint16_t port_;
  JoinHandle<void> loop_;
};

}  // namespace spindle::test
