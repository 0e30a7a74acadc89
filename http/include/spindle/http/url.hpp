// Url: an http:// or https:// URL split into what a request needs, and the
// target of a redirect resolved against the URL that sent it. No I/O:
// nothing here suspends, and the functions are thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "spindle/base/result.hpp"

namespace spindle::http {

// Plain value.
struct Url {
  bool https = false;
  std::string host;  // a name or an address literal, without brackets
  std::uint16_t port = 0;
  std::string target = "/";  // path and query, never empty; the fragment dropped

  // "http" or "https".
  std::string_view scheme() const noexcept { return https ? "https" : "http"; }
  // The Host header: the host (an IPv6 literal in brackets) and the port
  // unless it is the scheme's default.
  std::string authority() const;
  // The scheme and authority, which name one connection pool.
  std::string origin() const;
  // The whole URL.
  std::string to_string() const;
};

// "http://host[:port][/path][?query][#fragment]" (https likewise; the scheme
// is case-insensitive, "[v6]" hosts allowed). errc::bad_url (http/error.hpp)
// for anything else: another scheme, user information, no host, a bad port.
Result<Url> parse_url(std::string_view text);

// Where a redirect's Location header points, from `base`: an absolute URL,
// "//host/path", "/path" or a path relative to base's directory.
Result<Url> resolve_location(const Url& base, std::string_view location);

}  // namespace spindle::http
