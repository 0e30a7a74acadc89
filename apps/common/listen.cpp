#include "listen.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <string_view>
#include <system_error>

#include "spindle/net/resolve.hpp"

namespace spindle::apps {
namespace {

// Digits and dots only (no host name is all numeric), or a ':' (IPv6).
bool is_address_literal(std::string_view host) {
  return host.find(':') != std::string_view::npos ||
         host.find_first_not_of("0123456789.") == std::string_view::npos;
}

}  // namespace

std::optional<net::TcpListener> listen_or_explain(std::string_view program, std::string_view text) {
  auto hp = net::parse_host_port(text);
  if (!hp) {
    fmt::print(stderr, "{}: bad --listen address {}\n", program, hp.error());
    return std::nullopt;
  }
  net::SocketAddress addr;
  if (auto literal = net::SocketAddress::parse_ip(hp->host, hp->port)) {
    addr = *literal;
  } else if (is_address_literal(hp->host)) {
    // Not a host name: getaddrinfo would read "1.2.3" as 1.2.0.3.
    fmt::print(stderr, "{}: bad --listen address {}\n", program, literal.error());
    return std::nullopt;
  } else {
    auto found = net::resolve(hp->host, hp->port);
    if (!found) {
      fmt::print(stderr, "{}: cannot resolve '{}': {}\n", program, hp->host,
                 found.error().message());
      return std::nullopt;
    }
    addr = found->front();
  }
  auto listener = net::TcpListener::bind(addr);
  if (!listener) {
    const std::error_code& e = listener.error();
    std::string hint;
    if (e == std::errc::address_in_use) hint = " (the port is taken: is another server running?)";
    if (e == std::errc::permission_denied) hint = " (ports below 1024 need privileges)";
    if (e == std::errc::address_not_available) hint = " (no such address on this machine)";
    fmt::print(stderr, "{}: cannot listen on {}: {}{}\n", program, addr.to_string(), e.message(),
               hint);
    return std::nullopt;
  }
  return std::move(*listener);
}

}  // namespace spindle::apps
