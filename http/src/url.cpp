#include "spindle/http/url.hpp"

#include <algorithm>
#include <charconv>

#include "ascii.hpp"
#include "spindle/http/error.hpp"

namespace spindle::http {
namespace {

std::uint16_t default_port(bool https) noexcept { return https ? 443 : 80; }

// "host", "host:port", "[v6]" or "[v6]:port" into `url`.
bool parse_authority(std::string_view authority, Url& url) {
  if (authority.empty() || authority.find('@') != std::string_view::npos) return false;
  std::string_view port;
  bool has_port = false;
  if (authority.front() == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos || close == 1) return false;
    url.host = authority.substr(1, close - 1);
    const auto rest = authority.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return false;
      port = rest.substr(1);
      has_port = true;
    }
  } else {
    const auto colon = authority.find(':');
    url.host = authority.substr(0, colon);
    if (colon != std::string_view::npos) {
      port = authority.substr(colon + 1);
      has_port = true;
    }
    if (url.host.empty()) return false;
  }
  url.port = default_port(url.https);
  if (!has_port) return true;
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535)
    return false;
  url.port = static_cast<std::uint16_t>(value);
  return true;
}

// The path and query of `rest` (what follows the authority), without the fragment.
std::string target_of(std::string_view rest) {
  rest = rest.substr(0, rest.find('#'));
  if (rest.empty()) return "/";
  if (rest.front() == '?') return "/" + std::string(rest);
  return std::string(rest);
}

}  // namespace

std::string Url::authority() const {
  std::string a = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  if (port != default_port(https)) a += ":" + std::to_string(port);
  return a;
}

std::string Url::origin() const { return std::string(scheme()) + "://" + authority(); }

std::string Url::to_string() const { return origin() + target; }

Result<Url> parse_url(std::string_view text) {
  const auto colon = text.find("://");
  if (colon == std::string_view::npos) return failure(errc::bad_url);
  Url url;
  const std::string_view scheme = text.substr(0, colon);
  if (detail::iequals(scheme, "https")) {
    url.https = true;
  } else if (!detail::iequals(scheme, "http")) {
    return failure(errc::bad_url);
  }
  const std::string_view rest = text.substr(colon + 3);
  const auto path = rest.find_first_of("/?#");
  if (!parse_authority(rest.substr(0, path), url)) return failure(errc::bad_url);
  url.target = target_of(path == std::string_view::npos ? std::string_view() : rest.substr(path));
  if (url.target.front() != '/' ||
      std::ranges::any_of(url.target, [](char c) { return c <= ' ' || c == 0x7f; }))
    return failure(errc::bad_url);
  return url;
}

Result<Url> resolve_location(const Url& base, std::string_view location) {
  if (location.find("://") != std::string_view::npos) return parse_url(location);
  if (location.starts_with("//"))
    return parse_url(std::string(base.scheme()) + ":" + std::string(location));
  Url url = base;
  if (location.starts_with('/')) {
    url.target = target_of(location);
  } else {
    // Relative to the base's directory (its path up to the last '/').
    const std::string_view path = std::string_view(base.target).substr(0, base.target.find('?'));
    url.target = std::string(path.substr(0, path.rfind('/') + 1)) + target_of(location);
  }
  if (std::ranges::any_of(url.target, [](char c) { return c <= ' ' || c == 0x7f; }))
    return failure(errc::bad_url);
  return url;
}

}  // namespace spindle::http
