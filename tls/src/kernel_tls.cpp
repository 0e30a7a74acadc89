// The kernel's TLS offload: whether it is there (kernel_tls()), and the ops
// that use it (KernelOffloadOps for the real kernel).
//
// The probe asks for the tls ULP on a TCP socket that is not connected: the
// kernel looks the ULP up (loading its module if this process may) and then
// refuses an unconnected socket with ENOTCONN, or answers ENOENT when there
// is no such ULP. Nothing is attached, so the probe has no side effect.

#include "spindle/tls/kernel_tls.hpp"

#include <fmt/format.h>
#include <linux/tls.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/opensslconf.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <system_error>

#include "kernel_offload.hpp"
#include "spindle/base/unique_fd.hpp"
#include "spindle/sched/io.hpp"
#include "spindle/sched/log.hpp"
#include "spindle/tls/error.hpp"
#include "transport.hpp"

#ifndef SOL_TLS
#define SOL_TLS 282
#endif

namespace spindle::tls {
namespace {

constexpr char kUlp[] = "tls";

KernelTls probe() {
#ifdef OPENSSL_NO_KTLS
  return {false, "OpenSSL was built without kernel TLS"};
#else
  const UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP));
  if (!fd) {
    return {false, fmt::format("no socket to probe for the tls ULP: {}",
                               std::system_category().message(errno))};
  }
  if (::setsockopt(fd.get(), SOL_TCP, TCP_ULP, kUlp, sizeof kUlp) == 0 || errno == ENOTCONN)
    return {true, {}};
  if (errno == ENOENT) return {false, "the kernel has no tls ULP: module tls is not loaded"};
  return {false,
          fmt::format("the kernel refuses the tls ULP: {}", std::system_category().message(errno))};
#endif
}

// The kernel's ops. After the kernel refused a session's keys once, no
// further connection tries (the kernel lacks the cipher, or memory).
class Kernel final : public detail::KernelOffloadOps {
 public:
  bool available() const noexcept override {
    return kernel_tls().available && !refused_.load(std::memory_order_relaxed);
  }

  bool attach(int fd) noexcept override {
    return ::setsockopt(fd, SOL_TCP, TCP_ULP, kUlp, sizeof kUlp) == 0;
  }

  Result<void> install(net::TcpStream& tcp, std::span<const char> crypto_info) override {
    if (::setsockopt(tcp.native_handle(), SOL_TLS, TLS_TX, crypto_info.data(),
                     static_cast<socklen_t>(crypto_info.size())) == 0)
      return {};
    const int err = errno;
    if (!refused_.exchange(true, std::memory_order_relaxed)) {
      runtime_log(LogLevel::kWarning,
                  fmt::format("tls: the kernel refused a session's send keys (TLS_TX: {}); "
                              "records are encrypted in user space from now on",
                              std::system_category().message(err)));
    }
    return failure(errc::kernel_offload_refused);
  }

  Result<void> send(net::TcpStream& tcp, unsigned char type, std::string_view bytes,
                    Deadline deadline) override {
    if (type == detail::kApplicationData) return tcp.write_all(bytes, net::Timeout::at(deadline));
    // Any other record: one sendmsg whose control message names its type.
    union {
      cmsghdr header;
      char space[CMSG_SPACE(sizeof type)];
    } control{};
    iovec iov{const_cast<char*>(bytes.data()), bytes.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.space;
    msg.msg_controllen = sizeof control.space;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_TLS;
    c->cmsg_type = TLS_SET_RECORD_TYPE;
    c->cmsg_len = CMSG_LEN(sizeof type);
    *CMSG_DATA(c) = type;
    auto r = io::sendmsg(tcp.native_handle(), msg, MSG_NOSIGNAL, {.deadline = deadline});
    if (!r) return failure(r.error());
    if (*r != bytes.size()) return failure(spindle::errc::closed);  // a record is sent whole
    return {};
  }

 private:
  std::atomic<bool> refused_{false};
};

Kernel kernel;
std::atomic<detail::KernelOffloadOps*> ops_in_use{nullptr};

}  // namespace

const KernelTls& kernel_tls() {
  static const KernelTls answer = [] {
    KernelTls k = probe();
    runtime_log(LogLevel::kInfo,
                k.available ? std::string("tls: kernel TLS offload available: the kernel encrypts "
                                          "what a connection sends once its handshake is done")
                            : fmt::format("tls: kernel TLS offload unavailable: {}; records are "
                                          "encrypted in user space",
                                          k.reason));
    return k;
  }();
  return answer;
}

namespace detail {

KernelOffloadOps& kernel_offload_ops() noexcept {
  // acquire; pairs with the release in set_kernel_offload_ops
  KernelOffloadOps* ops = ops_in_use.load(std::memory_order_acquire);
  return ops != nullptr ? *ops : kernel;
}

void set_kernel_offload_ops(KernelOffloadOps* ops) noexcept {
  ops_in_use.store(ops, std::memory_order_release);
}

}  // namespace detail
}  // namespace spindle::tls
