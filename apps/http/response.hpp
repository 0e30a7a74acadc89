// The responses spindle-http sends, formatted straight into the connection's
// output buffer.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace spindle::apps::http {

enum class Status : int {
  kOk = 200,
  kBadRequest = 400,
  kForbidden = 403,
  kNotFound = 404,
  kMethodNotAllowed = 405,
  kPayloadTooLarge = 413,
  kHeaderFieldsTooLarge = 431,
};

struct ResponseShape {
  bool keep_alive = true;
  bool head = false;    // HEAD: the headers of the GET response, no body
  bool http10 = false;  // an HTTP/1.0 client must be told keep-alive explicitly
};

// Appends a complete response (status line, Server, Date, Content-Type,
// Content-Length, Connection when needed, body) to `out`. The body is
// "Hello, World!" for 200 and the reason phrase otherwise.
void append_response(std::string& out, Status status, const ResponseShape& shape);

// Appends a 200 response with `body` of type `content_type`.
void append_ok(std::string& out, std::string_view content_type, std::string_view body,
               const ResponseShape& shape);

// Appends the status line and headers of a 200 response whose body, of
// `length` bytes of type `content_type`, the caller sends next (unless HEAD).
void append_ok_head(std::string& out, std::string_view content_type, std::uint64_t length,
                    const ResponseShape& shape);

// Appends "HTTP/1.1 100 Continue" (for a client that sent Expect: 100-continue).
void append_continue(std::string& out);

}  // namespace spindle::apps::http
