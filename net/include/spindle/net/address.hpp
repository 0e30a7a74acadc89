// SocketAddress: an IPv4 or IPv6 address and a port, or a Unix domain socket
// address (a filesystem path, an abstract name, or unnamed), and parsing one
// from text ("127.0.0.1:8080", "[::1]:8080", "/run/app.sock", "@app") with
// errors that say what is wrong. No I/O and no name lookup: nothing here
// suspends, and the free functions are thread-safe.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

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

// Plain value (copy freely; thread-safe to read). Always a valid IPv4, IPv6
// or Unix socket address; the default is 0.0.0.0:0.
//
// Unix addresses (AF_UNIX) come in three kinds: a filesystem path
// ("/run/app.sock", or relative to the working directory), an abstract name
// (Linux: a name in the network namespace, no file; the kernel sees it with
// a leading NUL byte, and it is written with a leading '@' as ss(8) and
// /proc/net/unix do), and unnamed (a socket never bound, or one end of a
// socketpair). A path or name fits sun_path: at most kMaxUnixPath bytes.
class SocketAddress {
 public:
  // The longest Unix path or abstract name: sun_path less one byte (a path's
  // terminating NUL, an abstract name's leading one).
  static constexpr std::size_t kMaxUnixPath = sizeof(sockaddr_un::sun_path) - 1;

  SocketAddress() noexcept;

  // 127.0.0.1 / ::1 / 0.0.0.0 / :: with `port`.
  static SocketAddress loopback_v4(std::uint16_t port = 0) noexcept;
  static SocketAddress loopback_v6(std::uint16_t port = 0) noexcept;
  static SocketAddress any_v4(std::uint16_t port = 0) noexcept;
  static SocketAddress any_v6(std::uint16_t port = 0) noexcept;

  // A Unix socket at filesystem path `path` (absolute or relative); an error
  // message naming the path if it is empty, holds a NUL byte or is longer
  // than kMaxUnixPath bytes.
  static std::expected<SocketAddress, std::string> unix_path(std::string_view path);
  // A Linux abstract Unix socket named `name` (without the leading NUL; any
  // bytes); an error message if it is longer than kMaxUnixPath bytes. An
  // empty name is allowed and distinct from unnamed.
  static std::expected<SocketAddress, std::string> unix_abstract(std::string_view name);
  // The unnamed Unix address: binding to it autobinds (the kernel picks an
  // abstract name).
  static SocketAddress unix_unnamed() noexcept;

  // From what the kernel wrote (accept, getsockname, recvmsg); an error
  // message if `sa` is not AF_INET, AF_INET6 or AF_UNIX or `len` is too short
  // for it. An AF_UNIX `len` of just the family is the unnamed address.
  static std::expected<SocketAddress, std::string> from_sockaddr(const sockaddr* sa, socklen_t len);

  // "a.b.c.d:port" or "[ipv6]:port" (a zone may follow the IPv6 address:
  // "[fe80::1%lo]:80"); a Unix address: "/absolute/path", "@abstract-name",
  // or "unix:" followed by a path (relative ones need it: "unix:app.sock")
  // or by '@' and an abstract name. Host names are not resolved here: see
  // resolve(). The error says what is wrong, quoting `text`.
  static std::expected<SocketAddress, std::string> parse(std::string_view text);

  // An address literal without a port ("10.0.0.1", "::1", "[::1]") and `port`.
  static std::expected<SocketAddress, std::string> parse_ip(std::string_view text,
                                                            std::uint16_t port = 0);

  int family() const noexcept { return storage_.v4.sin_family; }
  bool is_v4() const noexcept { return family() == AF_INET; }
  bool is_v6() const noexcept { return family() == AF_INET6; }
  bool is_ip() const noexcept { return is_v4() || is_v6(); }
  bool is_unix() const noexcept { return family() == AF_UNIX; }
  // Unix addresses of each kind (false for IP addresses).
  bool is_unix_path() const noexcept;
  bool is_unix_abstract() const noexcept;
  bool is_unix_unnamed() const noexcept;
  // The path of a filesystem Unix address or the name of an abstract one
  // (without the leading NUL); empty for unnamed and IP addresses.
  std::string_view unix_name() const noexcept;

  // The port of an IP address; 0 for a Unix one, where set_port does nothing.
  std::uint16_t port() const noexcept;
  void set_port(std::uint16_t port) noexcept;

  // The address alone ("127.0.0.1", "::1", "fe80::1%lo") and with the port
  // ("127.0.0.1:80", "[::1]:80"), in the form parse() reads back. A Unix
  // address prints as a path ("/run/app.sock", "unix:app.sock" if relative),
  // '@' and its abstract name, or "(unnamed)" (which parse() refuses), the
  // same from both calls.
  std::string ip_string() const;
  std::string to_string() const;

  // For socket calls.
  const sockaddr* data() const noexcept { return &storage_.sa; }
  socklen_t size() const noexcept { return len_; }

  friend bool operator==(const SocketAddress& a, const SocketAddress& b) noexcept;

 private:
  // `address` in network byte order.
  static SocketAddress v4(std::uint32_t address, std::uint16_t port) noexcept;
  static SocketAddress v6(const in6_addr& address, std::uint16_t port) noexcept;
  // parse_ip's work, with errors quoting `text` (the whole input).
  static std::expected<SocketAddress, std::string> ip_from(std::string_view text,
                                                           std::string_view ip, std::uint16_t port);

  // A Unix address of `len` bytes whose sun_path starts with `bytes`.
  static SocketAddress unix_from(std::string_view bytes, socklen_t len) noexcept;
  // unix_path and unix_abstract, with errors quoting `text` (the whole input).
  static std::expected<SocketAddress, std::string> unix_path_from(std::string_view text,
                                                                  std::string_view path);
  static std::expected<SocketAddress, std::string> unix_abstract_from(std::string_view text,
                                                                      std::string_view name);

  union Storage {
    sockaddr sa;
    sockaddr_in v4;
    sockaddr_in6 v6;
    sockaddr_un un;
  } storage_;
  // The length of the sockaddr in storage_. Invariant: sizeof(sockaddr_in)
  // or sizeof(sockaddr_in6) for IP; for Unix, the family alone (unnamed),
  // the family, the path and its NUL (a path, NUL-terminated in storage_),
  // or the family, a NUL and the abstract name.
  socklen_t len_;
};

// Splits "host:port" or "[v6]:port" into its parts without resolving the
// host; the error says what is wrong.
std::expected<HostPort, std::string> parse_host_port(std::string_view text);

}  // namespace spindle::net
