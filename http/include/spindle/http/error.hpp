// The HTTP client's own error conditions (socket and TLS errors keep their
// codes). A stateless category object: thread-safe; nothing here suspends.
#pragma once

#include <system_error>

namespace spindle::http {

enum class errc : int {
  bad_url = 1,         // not an http:// or https:// URL the client can use
  too_many_redirects,  // more redirects than RequestOptions::max_redirects
  body_too_large,      // the response body passes RequestOptions::body_limit
  header_too_large,    // the status line and headers do not fit the stream buffer (16 KiB over TLS)
  malformed_response,  // the server's reply is not HTTP/1.x
  closed_early,        // the server closed the connection before the reply was whole
  no_ca_store,         // https:// without ClientOptions::tls, and no system CA store
};

const std::error_category& http_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), http_category()};
}

}  // namespace spindle::http

template <>
struct std::is_error_code_enum<spindle::http::errc> : std::true_type {};
