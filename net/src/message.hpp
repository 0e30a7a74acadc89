// Private: one sendmsg or recvmsg with an address and descriptors
// (SCM_RIGHTS), for the datagram sockets and for passing descriptors over
// Unix streams.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "spindle/base/result.hpp"
#include "spindle/net/address.hpp"
#include "spindle/net/received.hpp"
#include "spindle/sched/io.hpp"

namespace spindle::net::detail {

// Throws std::invalid_argument naming `call` if `fds` holds more than
// kMaxPassedFds descriptors.
void check_fd_count(std::span<const int> fds, const char* call);

// sendmsg(2) of `data` (MSG_NOSIGNAL), to `to` unless it is null, with `fds`
// (checked) attached: the bytes sent.
// Suspends: until the kernel takes them, an error, `deadline` or an abort.
Result<std::size_t> send_message(int fd, std::span<const std::byte> data, std::span<const int> fds,
                                 const SocketAddress* to, const IoOptions& options);

// recvmsg(2) into `buf`, taking at most `max_fds` descriptors (close-on-exec).
// Received::from is the sender (unnamed when the kernel names none); more
// descriptors than `max_fds` (MSG_CTRUNC) closes them and fails with
// std::errc::message_size.
// Suspends: until a message arrives, an error, `deadline` or an abort.
Result<Received> receive_message(int fd, std::span<std::byte> buf, std::size_t max_fds,
                                 const IoOptions& options);

}  // namespace spindle::net::detail
