// Kernel feature probe for io_uring, run once before a runtime takes resources.
// Thread-safe (no shared state: it sets up and closes its own temporary
// rings). Blocks the calling thread only for those few syscalls; never
// suspends a fiber.
#pragma once

#include <string>

namespace spindle::uring {

struct KernelSupport {
  bool single_issuer_defer_taskrun = false;  // IORING_SETUP_SINGLE_ISSUER|DEFER_TASKRUN
  bool op_ftruncate = false;                 // IORING_OP_FTRUNCATE (Linux 6.9+)
  bool op_waitid = false;                    // IORING_OP_WAITID (Linux 6.7+)
};

// Checks that io_uring is usable and has what spindle needs: IORING_FEAT_NODROP,
// IORING_FEAT_EXT_ARG, and the opcodes NOP, READ, WRITE, READV, WRITEV,
// POLL_ADD, ASYNC_CANCEL. Throws std::runtime_error with a message naming what
// is missing (and the likely fix: kernel version, kernel.io_uring_disabled).
// Returns the optional features found.
KernelSupport require_kernel_support();

}  // namespace spindle::uring
