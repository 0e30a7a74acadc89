#include "socket_ops.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <stdexcept>
#include <string>

#include "counters.hpp"
#include "spindle/sched/io.hpp"

namespace spindle::net::detail {
namespace {

// The kernel's limits of the keepalive settings (MAX_TCP_KEEPIDLE,
// MAX_TCP_KEEPINTVL, MAX_TCP_KEEPCNT).
constexpr long kMaxKeepaliveSeconds = 32767;
constexpr int kMaxKeepaliveCount = 127;

[[noreturn]] void invalid(const std::string& what) {
  throw std::invalid_argument("spindle::net: " + what);
}

void check_seconds(const char* name, std::chrono::seconds s) {
  if (s.count() < 1 || s.count() > kMaxKeepaliveSeconds) {
    invalid(std::string(name) + " must be 1 s .. " + std::to_string(kMaxKeepaliveSeconds) +
            " s, not " + std::to_string(s.count()) + " s");
  }
}

Result<void> set_int(int fd, int level, int name, int value) noexcept {
  if (::setsockopt(fd, level, name, &value, sizeof value) != 0) return errno_failure(errno);
  return {};
}

// A socket file at `addr` (a path) that no socket is bound to: its owner
// went away without removing it. The probe is a datagram connect, which
// leaves a live socket of either type untouched: a stream listener refuses
// it with EPROTOTYPE, a datagram socket accepts it without a word; only a
// file nothing is bound to gives ECONNREFUSED.
bool stale(const SocketAddress& addr) {
  const std::string path(addr.unix_name());
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  const UniqueFd probe(::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  return probe && ::connect(probe.get(), addr.data(), addr.size()) != 0 && errno == ECONNREFUSED;
}

using NameCall = int (*)(int, sockaddr*, socklen_t*);

Result<SocketAddress> address_of(int fd, NameCall call) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (call(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return errno_failure(errno);
  auto a = SocketAddress::from_sockaddr(reinterpret_cast<const sockaddr*>(&ss), len);
  if (!a) return errno_failure(EAFNOSUPPORT);
  return *a;
}

}  // namespace

void check_buffer_sizes(const BufferSizes& sizes) {
  for (auto [name, value] : {std::pair("BufferSizes::send", sizes.send),
                             std::pair("BufferSizes::receive", sizes.receive)}) {
    if (value > BufferSizes::kMax) {
      invalid(std::string(name) + " is " + std::to_string(value) + " bytes, above " +
              std::to_string(BufferSizes::kMax));
    }
  }
}

void check_keepalive(const Keepalive& keepalive) {
  check_seconds("Keepalive::idle", keepalive.idle);
  check_seconds("Keepalive::interval", keepalive.interval);
  if (keepalive.count < 1 || keepalive.count > kMaxKeepaliveCount) {
    invalid("Keepalive::count must be 1 .. " + std::to_string(kMaxKeepaliveCount) + ", not " +
            std::to_string(keepalive.count));
  }
}

Result<UniqueFd> open_socket(int family, int type, int protocol, const SocketSetup& setup) {
  check_buffer_sizes(setup.buffers);
  if (setup.keepalive != nullptr) check_keepalive(*setup.keepalive);
  if ((protocol == 0) != (family == AF_UNIX)) return errno_failure(EAFNOSUPPORT);
  UniqueFd fd(::socket(family, type | SOCK_CLOEXEC, protocol));
  if (!fd) return errno_failure(errno);
  Result<void> r;
  if (r && setup.reuse_address) r = set_flag(fd.get(), SOL_SOCKET, SO_REUSEADDR, true);
  if (r && setup.reuse_port) r = set_flag(fd.get(), SOL_SOCKET, SO_REUSEPORT, true);
  if (r) r = set_buffer_sizes(fd.get(), setup.buffers);
  if (r && setup.keepalive != nullptr) r = set_keepalive(fd.get(), setup.keepalive);
  if (!r) return failure(r.error());
  return fd;
}

Result<void> bind_to(int fd, const SocketAddress& addr, bool remove_stale) {
  if (::bind(fd, addr.data(), addr.size()) == 0) return {};
  const int err = errno;
  if (err != EADDRINUSE || !remove_stale || !addr.is_unix_path() || !stale(addr))
    return errno_failure(err);
  const std::string path(addr.unix_name());
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return errno_failure(errno);
  if (::bind(fd, addr.data(), addr.size()) != 0) return errno_failure(errno);
  return {};
}

Result<UniqueFd> open_listener(const SocketAddress& addr, int protocol, const SocketSetup& setup,
                               bool remove_stale, int backlog) {
  auto fd = open_socket(addr.family(), SOCK_STREAM, protocol, setup);
  if (!fd) return fd;
  if (auto r = bind_to(fd->get(), addr, remove_stale); !r) return failure(r.error());
  if (::listen(fd->get(), backlog) != 0) return errno_failure(errno);
  return fd;
}

Result<std::pair<UniqueFd, UniqueFd>> socket_pair(int type) {
  int sv[2];
  if (::socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv) != 0) return errno_failure(errno);
  return std::pair(UniqueFd(sv[0]), UniqueFd(sv[1]));
}

Result<Accepted> accept_connection(const UniqueFd& fd, std::uint64_t fd_id, Timeout timeout) {
  if (!fd) return failure(errc::closed);
  const Deadline deadline = timeout.deadline(std::chrono::nanoseconds::max());
  for (;;) {
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    auto r = io::accept(fd.get(), reinterpret_cast<sockaddr*>(&peer), &len, SOCK_CLOEXEC,
                        {.deadline = deadline, .fd_id = fd_id});
    if (!r) {
      // The connection was reset while it waited in the queue: take the next.
      if (r.error() == std::errc::connection_aborted) continue;
      return failure(r.error());
    }
    kInboundConnections.add();
    auto addr = SocketAddress::from_sockaddr(reinterpret_cast<const sockaddr*>(&peer), len);
    return Accepted{UniqueFd(*r), addr ? *addr : SocketAddress()};
  }
}

Result<void> set_flag(int fd, int level, int name, bool on) noexcept {
  return set_int(fd, level, name, on ? 1 : 0);
}

Result<void> set_buffer_sizes(int fd, const BufferSizes& sizes) {
  check_buffer_sizes(sizes);
  if (sizes.send != 0) {
    if (auto r = set_int(fd, SOL_SOCKET, SO_SNDBUF, static_cast<int>(sizes.send)); !r) return r;
  }
  if (sizes.receive != 0)
    return set_int(fd, SOL_SOCKET, SO_RCVBUF, static_cast<int>(sizes.receive));
  return {};
}

Result<void> set_keepalive(int fd, const Keepalive* keepalive) {
  if (keepalive == nullptr) return set_flag(fd, SOL_SOCKET, SO_KEEPALIVE, false);
  check_keepalive(*keepalive);
  Result<void> r =
      set_int(fd, IPPROTO_TCP, TCP_KEEPIDLE, static_cast<int>(keepalive->idle.count()));
  if (r) r = set_int(fd, IPPROTO_TCP, TCP_KEEPINTVL, static_cast<int>(keepalive->interval.count()));
  if (r) r = set_int(fd, IPPROTO_TCP, TCP_KEEPCNT, keepalive->count);
  if (r) r = set_flag(fd, SOL_SOCKET, SO_KEEPALIVE, true);
  return r;
}

void apply_stream_options(int fd, const Config& config) noexcept {
  if (config.tcp_nodelay) (void)set_flag(fd, IPPROTO_TCP, TCP_NODELAY, true);
  if (config.zero_linger) {
    const linger l{.l_onoff = 1, .l_linger = 0};
    (void)::setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  }
}

Result<SocketAddress> local_address(int fd) { return address_of(fd, ::getsockname); }

Result<SocketAddress> peer_address(int fd) { return address_of(fd, ::getpeername); }

}  // namespace spindle::net::detail
