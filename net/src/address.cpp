#include "spindle/net/address.hpp"

#include <arpa/inet.h>
#include <net/if.h>

#include <algorithm>
#include <cstddef>
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

// Where sun_path starts in a sockaddr_un: the length of an unnamed address.
constexpr socklen_t kUnixHeader = offsetof(sockaddr_un, sun_path);
constexpr std::size_t kSunPath = sizeof(sockaddr_un::sun_path);

std::string too_long(std::string_view what, std::size_t n) {
  return std::string(what) + " is " + std::to_string(n) + " bytes, longer than the " +
         std::to_string(SocketAddress::kMaxUnixPath) + " that fit in sun_path";
}

}  // namespace

SocketAddress::SocketAddress() noexcept : len_(sizeof(sockaddr_in)) {
  std::memset(&storage_, 0, sizeof storage_);
  storage_.v4.sin_family = AF_INET;
}

SocketAddress SocketAddress::unix_from(std::string_view bytes, socklen_t len) noexcept {
  SocketAddress a;
  a.storage_.un.sun_family = AF_UNIX;
  std::copy(bytes.begin(), bytes.end(), a.storage_.un.sun_path);
  a.len_ = len;
  return a;
}

std::expected<SocketAddress, std::string> SocketAddress::unix_path(std::string_view path) {
  return unix_path_from(path, path);
}

std::expected<SocketAddress, std::string> SocketAddress::unix_path_from(std::string_view text,
                                                                        std::string_view path) {
  if (path.empty()) return bad(text, "empty Unix socket path");
  if (path.find('\0') != std::string_view::npos)
    return bad(text, "a NUL byte in a Unix socket path");
  if (path.size() > kMaxUnixPath) return bad(text, too_long("the Unix socket path", path.size()));
  return unix_from(path, static_cast<socklen_t>(kUnixHeader + path.size() + 1));
}

std::expected<SocketAddress, std::string> SocketAddress::unix_abstract(std::string_view name) {
  return unix_abstract_from(name, name);
}

std::expected<SocketAddress, std::string> SocketAddress::unix_abstract_from(std::string_view text,
                                                                            std::string_view name) {
  if (name.size() > kMaxUnixPath)
    return bad(text, too_long("the abstract socket name", name.size()));
  SocketAddress a = unix_from({}, static_cast<socklen_t>(kUnixHeader + 1 + name.size()));
  std::copy(name.begin(), name.end(), a.storage_.un.sun_path + 1);
  return a;
}

SocketAddress SocketAddress::unix_unnamed() noexcept { return unix_from({}, kUnixHeader); }

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
  a.len_ = sizeof(sockaddr_in6);
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
    a.len_ = sizeof(sockaddr_in6);
    return a;
  }
  if (sa->sa_family == AF_UNIX) {
    const auto* un = reinterpret_cast<const sockaddr_un*>(sa);
    const std::size_t n = std::min<std::size_t>(len - kUnixHeader, kSunPath);
    if (n == 0) return unix_unnamed();
    if (un->sun_path[0] == '\0') {
      return unix_from({un->sun_path, n}, static_cast<socklen_t>(kUnixHeader + n));
    }
    // A path, with its NUL when it has one (the kernel may count it or not).
    const std::size_t path = ::strnlen(un->sun_path, n);
    return unix_from({un->sun_path, path},
                     static_cast<socklen_t>(kUnixHeader + path + (path < kSunPath ? 1 : 0)));
  }
  return std::unexpected<std::string>("address family " + std::to_string(sa->sa_family) +
                                      " is not IPv4, IPv6 or Unix");
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
  a.len_ = sizeof(sockaddr_in6);
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
  constexpr std::string_view kUnixScheme = "unix:";
  if (text.starts_with(kUnixScheme)) {
    const std::string_view rest = text.substr(kUnixScheme.size());
    if (rest.starts_with('@')) return unix_abstract_from(text, rest.substr(1));
    return unix_path_from(text, rest);
  }
  if (text.starts_with('/')) return unix_path_from(text, text);
  if (text.starts_with('@')) return unix_abstract_from(text, text.substr(1));
  auto hp = parse_host_port(text);
  if (!hp) return std::unexpected<std::string>(std::move(hp.error()));
  return ip_from(text, hp->host, hp->port);
}

bool SocketAddress::is_unix_path() const noexcept {
  return is_unix() && len_ > kUnixHeader && storage_.un.sun_path[0] != '\0';
}

bool SocketAddress::is_unix_abstract() const noexcept {
  return is_unix() && len_ > kUnixHeader && storage_.un.sun_path[0] == '\0';
}

bool SocketAddress::is_unix_unnamed() const noexcept { return is_unix() && len_ == kUnixHeader; }

std::string_view SocketAddress::unix_name() const noexcept {
  if (is_unix_path()) return {storage_.un.sun_path, ::strnlen(storage_.un.sun_path, kSunPath)};
  if (is_unix_abstract()) return {storage_.un.sun_path + 1, len_ - kUnixHeader - 1};
  return {};
}

std::uint16_t SocketAddress::port() const noexcept {
  if (is_unix()) return 0;
  return ntohs(is_v6() ? storage_.v6.sin6_port : storage_.v4.sin_port);
}

void SocketAddress::set_port(std::uint16_t port) noexcept {
  if (is_v6()) {
    storage_.v6.sin6_port = htons(port);
  } else if (is_v4()) {
    storage_.v4.sin_port = htons(port);
  }
}

std::string SocketAddress::ip_string() const {
  if (is_unix()) {
    const std::string_view name = unix_name();
    if (is_unix_abstract()) return "@" + std::string(name);
    if (is_unix_unnamed()) return "(unnamed)";
    return name.starts_with('/') ? std::string(name) : "unix:" + std::string(name);
  }
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
  if (is_unix()) return ip_string();
  const std::string p = std::to_string(port());
  return is_v6() ? "[" + ip_string() + "]:" + p : ip_string() + ":" + p;
}

bool operator==(const SocketAddress& a, const SocketAddress& b) noexcept {
  if (a.family() != b.family() || a.port() != b.port() || a.len_ != b.len_) return false;
  if (a.is_unix()) {
    return std::memcmp(a.storage_.un.sun_path, b.storage_.un.sun_path, a.len_ - kUnixHeader) == 0;
  }
  if (a.is_v6()) {
    return std::memcmp(&a.storage_.v6.sin6_addr, &b.storage_.v6.sin6_addr, sizeof(in6_addr)) == 0 &&
           a.storage_.v6.sin6_scope_id == b.storage_.v6.sin6_scope_id;
  }
  return a.storage_.v4.sin_addr.s_addr == b.storage_.v4.sin_addr.s_addr;
}

}  // namespace spindle::net
