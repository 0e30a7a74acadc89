#include "spindle/http/error.hpp"

#include <string>

namespace spindle::http {
namespace {

class HttpCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "spindle.http"; }
  std::string message(int value) const override {
    switch (static_cast<errc>(value)) {
      case errc::bad_url:
        return "http: not an http:// or https:// URL with a host";
      case errc::too_many_redirects:
        return "http: more redirects than max_redirects";
      case errc::body_too_large:
        return "http: the response body is larger than body_limit";
      case errc::header_too_large:
        return "http: the response's headers are too large";
      case errc::malformed_response:
        return "http: the server's reply is not HTTP/1.x";
      case errc::closed_early:
        return "http: the server closed the connection before its reply was whole";
      case errc::no_ca_store:
        return "http: no system CA store to verify https:// servers (set ClientOptions::tls)";
    }
    return "http: unknown error";
  }
};

}  // namespace

const std::error_category& http_category() noexcept {
  static const HttpCategory category;
  return category;
}

}  // namespace spindle::http
