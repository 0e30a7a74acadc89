#include "message.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "spindle/sched/io.hpp"

namespace spindle::net::detail {
namespace {

// Room for the most descriptors one message carries.
constexpr std::size_t kControlBytes = CMSG_SPACE(kMaxPassedFds * sizeof(int));

}  // namespace

void check_fd_count(std::span<const int> fds, const char* call) {
  if (fds.size() > kMaxPassedFds) {
    throw std::invalid_argument("spindle::net::" + std::string(call) + ": " +
                                std::to_string(fds.size()) + " descriptors, more than the " +
                                std::to_string(kMaxPassedFds) + " one message carries");
  }
}

Result<std::size_t> send_message(int fd, std::span<const std::byte> data, std::span<const int> fds,
                                 const SocketAddress* to, const IoOptions& options) {
  check_fd_count(fds, "send_fds");
  alignas(cmsghdr) std::byte control[kControlBytes];
  iovec iov{const_cast<std::byte*>(data.data()), data.size()};
  msghdr msg{};
  if (to != nullptr) {
    msg.msg_name = const_cast<sockaddr*>(to->data());
    msg.msg_namelen = to->size();
  }
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (!fds.empty()) {
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(fds.size_bytes());
    std::memset(control, 0, msg.msg_controllen);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(fds.size_bytes());
    std::memcpy(CMSG_DATA(c), fds.data(), fds.size_bytes());
  }
  return io::sendmsg(fd, msg, MSG_NOSIGNAL, options);
}

Result<Received> receive_message(int fd, std::span<std::byte> buf, std::size_t max_fds,
                                 const IoOptions& options) {
  max_fds = std::min(max_fds, kMaxPassedFds);
  alignas(cmsghdr) std::byte control[kControlBytes];
  sockaddr_storage from{};
  iovec iov{buf.data(), buf.size()};
  msghdr msg{};
  msg.msg_name = &from;
  msg.msg_namelen = sizeof from;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (max_fds > 0) {
    // Exactly `max_fds` descriptors' room: CMSG_SPACE would add the
    // alignment padding, which the kernel fills with descriptors as well.
    msg.msg_control = control;
    msg.msg_controllen = CMSG_LEN(max_fds * sizeof(int));
  }
  auto r = io::recvmsg(fd, msg, MSG_CMSG_CLOEXEC, options);
  if (!r) return failure(r.error());
  Received out;
  out.size = *r;
  out.truncated = (msg.msg_flags & MSG_TRUNC) != 0;
  // Own every descriptor that arrived first, so that each is closed if the
  // message fails.
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < n; ++i) {
      int passed = -1;
      std::memcpy(&passed, CMSG_DATA(c) + i * sizeof(int), sizeof passed);
      out.fds.emplace_back(passed);
    }
  }
  if ((msg.msg_flags & MSG_CTRUNC) != 0 || out.fds.size() > max_fds) return errno_failure(EMSGSIZE);
  auto sender =
      SocketAddress::from_sockaddr(reinterpret_cast<const sockaddr*>(&from), msg.msg_namelen);
  out.from = sender ? *sender : SocketAddress::unix_unnamed();
  return out;
}

}  // namespace spindle::net::detail
