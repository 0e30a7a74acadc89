// The kernel's side of TLS offload (transport.hpp says when it is used):
// attaching the tls ULP to a socket, installing the send keys, and sending
// records the kernel encrypts. Behind an interface so that a test can stand
// in for a kernel that has the tls ULP.
#pragma once

#include <span>
#include <string_view>

#include "spindle/base/result.hpp"
#include "spindle/base/time.hpp"
#include "spindle/net/stream.hpp"

namespace spindle::tls::detail {

// Thread-safe: one object serves every connection.
class KernelOffloadOps {
 public:
  virtual ~KernelOffloadOps() = default;
  // Whether connections should try offload at all.
  virtual bool available() const noexcept = 0;
  // Attaches the tls ULP to the connected socket `fd`: its bytes pass
  // unchanged until keys are installed. True if attached. Never suspends.
  virtual bool attach(int fd) noexcept = 0;
  // Installs the send keys: a struct tls12_crypto_info_* (linux/tls.h).
  // Never suspends; errc::kernel_offload_refused if the kernel refuses them.
  virtual Result<void> install(net::TcpStream& tcp, std::span<const char> crypto_info) = 0;
  // Sends `bytes` as records of `type`: any number of records for
  // application data, exactly one otherwise.
  // Suspends: until the bytes are with the kernel, an error or the deadline.
  virtual Result<void> send(net::TcpStream& tcp, unsigned char type, std::string_view bytes,
                            Deadline deadline) = 0;
};

// The ops in use: the kernel's, unless a test replaced them.
KernelOffloadOps& kernel_offload_ops() noexcept;

// Tests: makes `ops` the ops in use (null: the kernel's again). Call only
// while no runtime runs.
void set_kernel_offload_ops(KernelOffloadOps* ops) noexcept;

}  // namespace spindle::tls::detail
