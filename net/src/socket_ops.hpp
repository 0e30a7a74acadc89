// Private helpers shared by the listener and the stream: the default
// deadline of a read or write, socket options from Config, and a socket's
// local address.
#pragma once

#include "spindle/base/result.hpp"
#include "spindle/net/address.hpp"
#include "spindle/net/timeout.hpp"
#include "spindle/sched/config.hpp"
#include "spindle/sched/runtime.hpp"

namespace spindle::net::detail {

inline Deadline read_write_deadline(const Timeout& t) {
  return t.deadline(current_config().read_write_timeout);
}

// TCP_NODELAY and SO_LINGER {1, 0} per `config` on a connected socket. A
// failure (the peer already reset the connection) is left for the first read
// or write to report.
void apply_stream_options(int fd, const Config& config) noexcept;

// getsockname(2) of a bound or connected socket.
Result<SocketAddress> local_address(int fd);

}  // namespace spindle::net::detail
