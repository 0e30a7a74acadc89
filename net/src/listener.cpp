#include "spindle/net/listener.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <utility>

#include "counters.hpp"
#include "socket_ops.hpp"
#include "spindle/sched/io.hpp"

namespace spindle::net {

TcpListener::TcpListener(UniqueFd fd) noexcept : fd_(std::move(fd)), fd_id_(io::new_fd_id()) {}

void TcpListener::close() noexcept { fd_.reset(); }

Result<TcpListener> TcpListener::bind(const SocketAddress& addr, ListenOptions options) {
  // A blocking socket: io_uring waits for readiness itself (and would answer
  // EAGAIN for a non-blocking one).
  const int fd = ::socket(addr.family(), SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
  if (fd < 0) return errno_failure(errno);
  TcpListener listener{UniqueFd(fd)};  // closes fd on every error path below
  if (options.reuse_address) {
    const int one = 1;
    if (::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0)
      return errno_failure(errno);
  }
  if (::bind(fd, addr.data(), addr.size()) != 0) return errno_failure(errno);
  if (::listen(fd, options.backlog) != 0) return errno_failure(errno);
  return listener;
}

Result<TcpStream> TcpListener::accept(Timeout timeout) {
  if (!fd_) return failure(errc::closed);
  const Deadline deadline = timeout.deadline(std::chrono::nanoseconds::max());
  const int fd = fd_.get();
  for (;;) {
    sockaddr_storage peer{};
    socklen_t len = sizeof peer;
    auto r = io::accept(fd, reinterpret_cast<sockaddr*>(&peer), &len, SOCK_CLOEXEC,
                        {.deadline = deadline, .fd_id = fd_id_});
    if (!r) {
      // The connection was reset while it waited in the queue: take the next.
      if (r.error() == std::errc::connection_aborted) continue;
      return failure(r.error());
    }
    const int conn = *r;
    detail::kInboundConnections.add();
    detail::apply_stream_options(conn, current_config());
    auto addr = SocketAddress::from_sockaddr(reinterpret_cast<const sockaddr*>(&peer), len);
    return TcpStream(UniqueFd(conn), addr ? *addr : SocketAddress());
  }
}

Result<SocketAddress> TcpListener::local_addr() const {
  if (!fd_) return failure(errc::closed);
  return detail::local_address(fd_.get());
}

}  // namespace spindle::net
