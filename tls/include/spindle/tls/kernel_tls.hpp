// Whether this machine's kernel can take over TLS records (kernel TLS
// offload): the `tls` TCP upper-layer protocol (ULP), found by asking for it
// on a socket that is not connected. Probed once per process, thread-safe;
// nothing here suspends.
#pragma once

#include <string>

namespace spindle::tls {

struct KernelTls {
  bool available = false;
  // Why not, when it is not ("the kernel has no tls ULP: module tls is not
  // loaded"); empty otherwise.
  std::string reason;
};

// The probe's answer. The first call (at the latest, the first Context made
// with KernelOffload::kAuto) also logs it once through runtime_log, at
// LogLevel::kInfo.
const KernelTls& kernel_tls();

}  // namespace spindle::tls
