// SocketAddress: an IPv4 or IPv6 address and a port, and parsing one from
// text ("127.0.0.1:8080", "[::1]:8080") with errors that say what is wrong.
// No I/O and no name lookup: nothing here suspends, and the free functions
// are thread-safe.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <expected>
#include <string>
#include <string_view>

namespace spindle::net {

// A host name or address literal and a port, split but not resolved:
// "example.org:80" -> {"example.org", 80}; "[::1]:80" -> {"::1", 80}.
struct HostPort {
  std::string host;
  std::uint16_t port = 0;
};

// Plain value (copy freely; thread-safe to read). Always a valid IPv4 or
// IPv6 socket address; the default is 0.0.0.0:0.
class SocketAddress {
 public:
  SocketAddress() noexcept;

  // 127.0.0.1 / ::1 / 0.0.0.0 / :: with `port`.
  static SocketAddress loopback_v4(std::uint16_t port = 0) noexcept;
  static SocketAddress loopback_v6(std::uint16_t port = 0) noexcept;
  static SocketAddress any_v4(std::uint16_t port = 0) noexcept;
  static SocketAddress any_v6(std::uint16_t port = 0) noexcept;

  // From what the kernel wrote (accept, getsockname); an error message if
  // `sa` is not AF_INET or AF_INET6 or `len` is too short for it.
  static std::expected<SocketAddress, std::string> from_sockaddr(const sockaddr* sa, socklen_t len);

  // "a.b.c.d:port" or "[ipv6]:port" (a zone may follow the IPv6 address:
  // "[fe80::1%lo]:80"). Host names are not resolved here: see resolve().
  // The error says what is wrong, quoting `text`.
  static std::expected<SocketAddress, std::string> parse(std::string_view text);

  // An address literal without a port ("10.0.0.1", "::1", "[::1]") and `port`.
  static std::expected<SocketAddress, std::string> parse_ip(std::string_view text,
                                                            std::uint16_t port = 0);

  int family() const noexcept { return storage_.v4.sin_family; }
  bool is_v4() const noexcept { return family() == AF_INET; }
  bool is_v6() const noexcept { return family() == AF_INET6; }
  std::uint16_t port() const noexcept;
  void set_port(std::uint16_t port) noexcept;

  // The address alone ("127.0.0.1", "::1", "fe80::1%lo") and with the port
  // ("127.0.0.1:80", "[::1]:80"), in the form parse() reads back.
  std::string ip_string() const;
  std::string to_string() const;

  // For socket calls.
  const sockaddr* data() const noexcept { return &storage_.sa; }
  socklen_t size() const noexcept;

  friend bool operator==(const SocketAddress& a, const SocketAddress& b) noexcept;

 private:
  // `address` in network byte order.
  static SocketAddress v4(std::uint32_t address, std::uint16_t port) noexcept;
  static SocketAddress v6(const in6_addr& address, std::uint16_t port) noexcept;
  // parse_ip's work, with errors quoting `text` (the whole input).
  static std::expected<SocketAddress, std::string> ip_from(std::string_view text,
                                                           std::string_view ip, std::uint16_t port);

  union Storage {
    sockaddr sa;
    sockaddr_in v4;
    sockaddr_in6 v6;
  } storage_;
};

// Splits "host:port" or "[v6]:port" into its parts without resolving the
// host; the error says what is wrong.
std::expected<HostPort, std::string> parse_host_port(std::string_view text);

}  // namespace spindle::net
