// Request and Response: what the HTTP client sends and what it hands back.
// Plain values (copy freely; thread-safe to read); nothing here suspends.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spindle::http {

struct Header {
  std::string name;
  std::string value;
};

struct Request {
  std::string method = "GET";
  std::string url;
  // Sent as given, after the Host, User-Agent and Content-Length the client
  // adds unless they are here already.
  std::vector<Header> headers{};
  std::string body{};
};

struct Response {
  int status = 0;
  std::string reason;
  int version = 11;  // 10 or 11 (HTTP/1.0, HTTP/1.1)
  std::vector<Header> headers;
  // The body, its Content-Length or chunked encoding undone.
  std::string body;
  // The URL that answered: the request's, or the last redirect's.
  std::string url;

  // The value of the first header named `name` (any case), if there is one.
  std::optional<std::string_view> header(std::string_view name) const noexcept;
};

}  // namespace spindle::http
