#include "response.hpp"

#include <charconv>
#include <ctime>
#include <string_view>

namespace spindle::apps::http {
namespace {

struct Phrase {
  std::string_view status_line;  // "HTTP/1.1 200 OK\r\n"
  std::string_view body;
};

Phrase phrase(Status s) {
  switch (s) {
    case Status::kOk:
      return {"HTTP/1.1 200 OK\r\n", "Hello, World!"};
    case Status::kBadRequest:
      return {"HTTP/1.1 400 Bad Request\r\n", "Bad Request\n"};
    case Status::kForbidden:
      return {"HTTP/1.1 403 Forbidden\r\n", "Forbidden\n"};
    case Status::kNotFound:
      return {"HTTP/1.1 404 Not Found\r\n", "Not Found\n"};
    case Status::kMethodNotAllowed:
      return {"HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, HEAD\r\n", "Method Not Allowed\n"};
    case Status::kPayloadTooLarge:
      return {"HTTP/1.1 413 Payload Too Large\r\n", "Payload Too Large\n"};
    case Status::kHeaderFieldsTooLarge:
      return {"HTTP/1.1 431 Request Header Fields Too Large\r\n",
              "Request Header Fields Too Large\n"};
  }
  return {"HTTP/1.1 500 Internal Server Error\r\n", ""};
}

// "Date: Wed, 02 Dec 2026 14:08:29 GMT\r\n", formatted once per second per
// thread. Used and copied within one call: nothing keeps the thread_local's
// address across a park.
std::string_view date_header() {
  struct Cache {
    std::time_t second = -1;
    char text[64] = {};
    std::size_t size = 0;
  };
  thread_local Cache cache;
  const std::time_t now = std::time(nullptr);
  if (now != cache.second) {
    std::tm tm{};
    ::gmtime_r(&now, &tm);
    cache.size =
        std::strftime(cache.text, sizeof cache.text, "Date: %a, %d %b %Y %H:%M:%S GMT\r\n", &tm);
    cache.second = now;
  }
  return {cache.text, cache.size};
}

// The status line and headers of a response with a body of `length` bytes.
void append_head(std::string& out, std::string_view status_line, std::string_view content_type,
                 std::uint64_t length, const ResponseShape& shape) {
  out += status_line;
  out += "Server: spindle\r\n";
  out += date_header();
  out += "Content-Type: ";
  out += content_type;
  out += "\r\nContent-Length: ";
  char digits[24];
  const auto end = std::to_chars(digits, digits + sizeof digits, length).ptr;
  out.append(digits, end);
  out += "\r\n";
  if (!shape.keep_alive) {
    out += "Connection: close\r\n";
  } else if (shape.http10) {
    out += "Connection: keep-alive\r\n";
  }
  out += "\r\n";
}

// The whole response: status line, headers, and `body` unless HEAD.
void append(std::string& out, std::string_view status_line, std::string_view content_type,
            std::string_view body, const ResponseShape& shape) {
  append_head(out, status_line, content_type, body.size(), shape);
  if (!shape.head) out += body;
}

}  // namespace

void append_response(std::string& out, Status status, const ResponseShape& shape) {
  const Phrase p = phrase(status);
  append(out, p.status_line, "text/plain", p.body, shape);
}

void append_ok(std::string& out, std::string_view content_type, std::string_view body,
               const ResponseShape& shape) {
  append(out, phrase(Status::kOk).status_line, content_type, body, shape);
}

void append_ok_head(std::string& out, std::string_view content_type, std::uint64_t length,
                    const ResponseShape& shape) {
  append_head(out, phrase(Status::kOk).status_line, content_type, length, shape);
}

void append_continue(std::string& out) { out += "HTTP/1.1 100 Continue\r\n\r\n"; }

}  // namespace spindle::apps::http
