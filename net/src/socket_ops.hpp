// Private helpers shared by the sockets of net/: the limit of a read or
// write and the options of its operations, opening a socket with its options, binding (and removing
// a stale Unix socket file), accepting, the option calls with their range checks, and a socket's
// local address. The checks throw std::invalid_argument naming the option; the calls return the
// errno. None of these suspends but accept_connection.
#pragma once

#include <cstdint>
#include <span>
#include <utility>

#include "spindle/base/result.hpp"
#include "spindle/base/unique_fd.hpp"
#include "spindle/net/address.hpp"
#include "spindle/net/options.hpp"
#include "spindle/net/timeout.hpp"
#include "spindle/sched/config.hpp"
#include "spindle/sched/io.hpp"
#include "spindle/sched/runtime.hpp"

namespace spindle::net::detail {

// The limit of a read or write call: its Timeout, else
// Config::read_write_timeout, the duration left to start at its first wait.
inline Timeout::Limit read_write_limit(const Timeout& t) {
  return t.limit(current_config().read_write_timeout);
}

// The options of an operation of a call under `limit` (which takes the
// deadline of the call's first wait) on a socket of fd id `fd_id`.
inline IoOptions call_options(Timeout::Limit& limit, std::uint64_t fd_id) noexcept {
  return {
      .deadline = limit.deadline, .timeout = limit.timeout, .call_limit = &limit, .fd_id = fd_id};
}

inline std::span<std::byte> bytes(std::span<char> s) noexcept {
  return {reinterpret_cast<std::byte*>(s.data()), s.size()};
}

// The options a socket takes between socket() and bind(), connect() or
// listen().
struct SocketSetup {
  bool reuse_address = false;
  bool reuse_port = false;
  BufferSizes buffers{};
  const Keepalive* keepalive = nullptr;  // TCP only
};

// The SocketSetup of a ListenOptions, ConnectOptions, UdpOptions, ...: the
// fields of it that `options` has.
template <class Options>
SocketSetup setup_of(const Options& options) noexcept {
  SocketSetup s{.buffers = options.buffers};
  if constexpr (requires { options.reuse_address; }) s.reuse_address = options.reuse_address;
  if constexpr (requires { options.reuse_port; }) s.reuse_port = options.reuse_port;
  if constexpr (requires { options.keepalive; }) {
    s.keepalive = options.keepalive ? &*options.keepalive : nullptr;
  }
  return s;
}

// Throw std::invalid_argument naming the field out of range.
void check_buffer_sizes(const BufferSizes& sizes);
void check_keepalive(const Keepalive& keepalive);

// socket(2) of `family`, `type` and `protocol` (IPPROTO_TCP, IPPROTO_UDP, or
// 0 for AF_UNIX; EAFNOSUPPORT for a family that does not go with it),
// close-on-exec and blocking (io_uring waits for readiness itself, and would
// answer EAGAIN for a non-blocking socket), with `setup` applied. Checks
// `setup` first.
Result<UniqueFd> open_socket(int family, int type, int protocol, const SocketSetup& setup);

// bind(2). With `remove_stale`, a filesystem path that holds a socket file
// no socket is bound to (a connect to it is refused) is removed and bound
// again.
Result<void> bind_to(int fd, const SocketAddress& addr, bool remove_stale);

// open_socket (SOCK_STREAM), bind_to and listen(2) with `backlog`.
Result<UniqueFd> open_listener(const SocketAddress& addr, int protocol, const SocketSetup& setup,
                               bool remove_stale, int backlog);

// socketpair(2) of AF_UNIX `type`, close-on-exec.
Result<std::pair<UniqueFd, UniqueFd>> socket_pair(int type);

// The next connection of the listening socket `fd` with `fd_id`,
// close-on-exec, and its peer's address; a connection reset while queued is
// skipped. errc::closed if `fd` is not open.
// Suspends: as TcpListener::accept.
struct Accepted {
  UniqueFd fd;
  SocketAddress peer{};
};
Result<Accepted> accept_connection(const UniqueFd& fd, std::uint64_t fd_id, Timeout timeout);

// setsockopt(2) of a boolean option.
Result<void> set_flag(int fd, int level, int name, bool on) noexcept;
// SO_SNDBUF / SO_RCVBUF for the nonzero fields of `sizes` (checked).
Result<void> set_buffer_sizes(int fd, const BufferSizes& sizes);
// SO_KEEPALIVE on with the timings of `keepalive` (checked), or off (null).
Result<void> set_keepalive(int fd, const Keepalive* keepalive);

// TCP_NODELAY and SO_LINGER {1, 0} per `config` on a connected TCP socket.
// A failure (the peer already reset the connection) is left for the first
// read or write to report.
void apply_stream_options(int fd, const Config& config) noexcept;

// getsockname(2) / getpeername(2) of a socket.
Result<SocketAddress> local_address(int fd);
Result<SocketAddress> peer_address(int fd);

}  // namespace spindle::net::detail
