// Received: what a datagram receive (recv, recv_from) or a receive with
// descriptors (recv_fds) returns. A plain value (move-only: it owns the
// descriptors); nothing here suspends.
#pragma once

#include <cstddef>
#include <vector>

#include "spindle/base/unique_fd.hpp"
#include "spindle/net/address.hpp"

namespace spindle::net {

// The most descriptors one message carries (the kernel's SCM_MAX_FD).
inline constexpr std::size_t kMaxPassedFds = 253;

struct Received {
  // The bytes placed in the caller's buffer.
  std::size_t size = 0;
  // A datagram longer than the buffer: its rest is lost (MSG_TRUNC).
  bool truncated = false;
  // A datagram's sender (unnamed for an unbound Unix socket); unnamed from
  // a stream.
  SocketAddress from{};
  // recv_fds: the descriptors that came with the bytes, in order, each
  // close-on-exec.
  std::vector<UniqueFd> fds{};
};

}  // namespace spindle::net
