#include "spindle/net/address.hpp"

#include <arpa/inet.h>
#include <net/if.h>

#include <algorithm>
#include <cstring>

namespace spindle::net {
namespace {

std::unexpected<std::string> bad(std::string_view text, std::string_view why) {
  std::string m = "'";
  m += text;
  m += "': ";
  m += why;
  return std::unexpected<std::string>(std::move(m));
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// A decimal port 0..65535.
std::expected<std::uint16_t, std::string> parse_port(std::string_view whole, std::string_view p) {
  if (p.empty()) return bad(whole, "missing port after ':'");
  if (!all_digits(p) || p.size() > 5)
    return bad(whole, "port '" + std::string(p) + "' is not a number between 0 and 65535");
  unsigned v = 0;
  for (char c : p) v = v * 10 + static_cast<unsigned>(c - '0');
  if (v > 65535) return bad(whole, "port " + std::string(p) + " is above 65535");
  return static_cast<std::uint16_t>(v);
}

bool looks_like_v4(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
}

}  // namespace

SocketAddress::SocketAddress() noexcept {
  std::memset(&storage_, 0, sizeof storage_);
  storage_.v4.sin_family = AF_INET;
}

SocketAddress SocketAddress::loopback_v4(std::uint16_t port) noexcept {
  return v4(htonl(INADDR_LOOPBACK), port);
}

SocketAddress SocketAddress::any_v4(std::uint16_t port) noexcept {
  return v4(htonl(INADDR_ANY), port);
}

SocketAddress SocketAddress::loopback_v6(std::uint16_t port) noexcept {
  return v6(in6addr_loopback, port);
}

SocketAddress SocketAddress::any_v6(std::uint16_t port) noexcept { return v6(in6addr_any, port); }

SocketAddress SocketAddress::v4(std::uint32_t address, std::uint16_t port) noexcept {
  SocketAddress a;
  a.storage_.v4.sin_addr.s_addr = address;
  a.set_port(port);
  return a;
}

SocketAddress SocketAddress::v6(const in6_addr& address, std::uint16_t port) noexcept {
  SocketAddress a;
  a.storage_.v6.sin6_family = AF_INET6;
  a.storage_.v6.sin6_addr = address;
  a.set_port(port);
  return a;
}

std::expected<SocketAddress, std::string> SocketAddress::from_sockaddr(const sockaddr* sa,
                                                                       socklen_t len) {
  SocketAddress a;
  if (sa == nullptr || len < static_cast<socklen_t>(sizeof(sa_family_t)))
    return std::unexpected<std::string>("no socket address");
  if (sa->sa_family == AF_INET && len >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
    std::memcpy(&a.storage_.v4, sa, sizeof(sockaddr_in));
    return a;
  }
  if (sa->sa_family == AF_INET6 && len >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
    std::memcpy(&a.storage_.v6, sa, sizeof(sockaddr_in6));
    return a;
  }
  return std::unexpected<std::string>("address family " + std::to_string(sa->sa_family) +
                                      " is neither IPv4 nor IPv6");
}

std::expected<SocketAddress, std::string> SocketAddress::ip_from(std::string_view text,
                                                                 std::string_view ip,
                                                                 std::uint16_t port) {
  if (ip.size() >= 2 && ip.front() == '[' && ip.back() == ']') ip = ip.substr(1, ip.size() - 2);
  if (ip.empty()) return bad(text, "empty address");
  SocketAddress a;
  const std::string s(ip);
  if (s.find(':') == std::string::npos) {
    if (::inet_pton(AF_INET, s.c_str(), &a.storage_.v4.sin_addr) == 1) {
      a.set_port(port);
      return a;
    }
    if (looks_like_v4(ip))
      return bad(text, "not an IPv4 address (expected four numbers 0..255: 'a.b.c.d')");
    return bad(text, "not an IP address literal (host names need resolve())");
  }
  std::string addr = s;
  std::uint32_t scope = 0;
  if (const auto pct = s.find('%'); pct != std::string::npos) {
    addr = s.substr(0, pct);
    const std::string zone = s.substr(pct + 1);
    if (zone.empty()) return bad(text, "empty IPv6 zone after '%'");
    if (all_digits(zone) && zone.size() <= 9) {
      scope = static_cast<std::uint32_t>(std::stoul(zone));
    } else {
      scope = ::if_nametoindex(zone.c_str());
      if (scope == 0) return bad(text, "unknown network interface '" + zone + "' in IPv6 zone");
    }
  }
  a.storage_.v6.sin6_family = AF_INET6;
  if (::inet_pton(AF_INET6, addr.c_str(), &a.storage_.v6.sin6_addr) != 1)
    return bad(text, "not an IPv6 address");
  a.storage_.v6.sin6_scope_id = scope;
  a.set_port(port);
  return a;
}

std::expected<SocketAddress, std::string> SocketAddress::parse_ip(std::string_view text,
                                                                  std::uint16_t port) {
  return ip_from(text, text, port);
}

std::expected<HostPort, std::string> parse_host_port(std::string_view text) {
  if (text.empty()) return bad(text, "empty address (expected 'host:port')");
  std::string_view host, port;
  if (text.front() == '[') {
    const auto close = text.find(']');
    if (close == std::string_view::npos) return bad(text, "'[' without a closing ']'");
    host = text.substr(1, close - 1);
    const std::string_view rest = text.substr(close + 1);
    if (rest.empty() || rest.front() != ':')
      return bad(text, "missing ':port' after ']' (expected '[ipv6]:port')");
    port = rest.substr(1);
    if (host.empty()) return bad(text, "empty IPv6 address between '[' and ']'");
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return bad(text, "missing ':port' (expected 'host:port')");
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    if (host.find(':') != std::string_view::npos)
      return bad(text, "an IPv6 address needs brackets: '[addr]:port'");
    if (host.empty()) return bad(text, "missing host before ':'");
  }
  auto p = parse_port(text, port);
  if (!p) return std::unexpected<std::string>(std::move(p.error()));
  return HostPort{std::string(host), *p};
}

std::expected<SocketAddress, std::string> SocketAddress::parse(std::string_view text) {
  auto hp = parse_host_port(text);
  if (!hp) return std::unexpected<std::string>(std::move(hp.error()));
  return ip_from(text, hp->host, hp->port);
}

std::uint16_t SocketAddress::port() const noexcept {
  return ntohs(is_v6() ? storage_.v6.sin6_port : storage_.v4.sin_port);
}

void SocketAddress::set_port(std::uint16_t port) noexcept {
  if (is_v6()) {
    storage_.v6.sin6_port = htons(port);
  } else {
    storage_.v4.sin_port = htons(port);
  }
}

socklen_t SocketAddress::size() const noexcept {
  return is_v6() ? static_cast<socklen_t>(sizeof(sockaddr_in6))
                 : static_cast<socklen_t>(sizeof(sockaddr_in));
}

std::string SocketAddress::ip_string() const {
  char buf[INET6_ADDRSTRLEN + IF_NAMESIZE + 2] = {};
  if (is_v6()) {
    ::inet_ntop(AF_INET6, &storage_.v6.sin6_addr, buf, sizeof buf);
    std::string s = buf;
    if (storage_.v6.sin6_scope_id != 0) {
      char name[IF_NAMESIZE] = {};
      s += '%';
      s += ::if_indextoname(storage_.v6.sin6_scope_id, name)
               ? std::string(name)
               : std::to_string(storage_.v6.sin6_scope_id);
    }
    return s;
  }
  ::inet_ntop(AF_INET, &storage_.v4.sin_addr, buf, sizeof buf);
  return buf;
}

std::string SocketAddress::to_string() const {
  const std::string p = std::to_string(port());
  return is_v6() ? "[" + ip_string() + "]:" + p : ip_string() + ":" + p;
}

bool operator==(const SocketAddress& a, const SocketAddress& b) noexcept {
  if (a.family() != b.family() || a.port() != b.port()) return false;
  if (a.is_v6()) {
    return std::memcmp(&a.storage_.v6.sin6_addr, &b.storage_.v6.sin6_addr, sizeof(in6_addr)) == 0 &&
           a.storage_.v6.sin6_scope_id == b.storage_.v6.sin6_scope_id;
  }
  return a.storage_.v4.sin_addr.s_addr == b.storage_.v4.sin_addr.s_addr;
}

}  // namespace spindle::net
