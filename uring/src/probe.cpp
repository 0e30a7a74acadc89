// require_kernel_support(): one temporary ring, IORING_REGISTER_PROBE, and a
// tiny SINGLE_ISSUER|DEFER_TASKRUN ring, so a runtime fails at startup with one
// message naming everything missing instead of at its first I/O.
//
// Thread-safety: may run on any thread; it touches no shared state.

#include "spindle/uring/probe.hpp"

#include <liburing.h>

#include <cstring>
#include <stdexcept>
#include <string>

namespace spindle::uring {
namespace {

// IORING_OP_WAITID (Linux 6.7) and IORING_OP_FTRUNCATE (Linux 6.9) are newer
// than liburing 2.3's headers; the probe is indexed by opcode number, so the
// number is enough.
constexpr int kOpWaitid = 50;
constexpr int kOpFtruncate = 55;

constexpr const char* kFix =
    "spindle needs Linux 6.1 or newer with io_uring enabled (sysctl kernel.io_uring_disabled=0, "
    "and a seccomp policy that allows io_uring_setup/io_uring_enter/io_uring_register)";

struct RequiredOp {
  int op;
  const char* name;
};

constexpr RequiredOp kRequiredOps[] = {
    {IORING_OP_NOP, "IORING_OP_NOP"},
    {IORING_OP_READ, "IORING_OP_READ"},
    {IORING_OP_WRITE, "IORING_OP_WRITE"},
    {IORING_OP_READV, "IORING_OP_READV"},
    {IORING_OP_WRITEV, "IORING_OP_WRITEV"},
    {IORING_OP_POLL_ADD, "IORING_OP_POLL_ADD"},
    {IORING_OP_ASYNC_CANCEL, "IORING_OP_ASYNC_CANCEL"},
};

bool try_defer_taskrun() noexcept {
  io_uring ring{};
  io_uring_params params{};
  params.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
  if (io_uring_queue_init_params(2, &ring, &params) != 0) return false;
  io_uring_queue_exit(&ring);
  return true;
}

}  // namespace

KernelSupport require_kernel_support() {
  io_uring ring{};
  io_uring_params params{};
  const int ret = io_uring_queue_init_params(4, &ring, &params);
  if (ret < 0) {
    throw std::runtime_error(std::string("spindle: io_uring is unavailable (io_uring_setup: ") +
                             std::strerror(-ret) + "); " + kFix);
  }

  std::string missing;
  auto note_missing = [&missing](const char* what) {
    if (!missing.empty()) missing += ", ";
    missing += what;
  };
  if ((params.features & IORING_FEAT_NODROP) == 0) note_missing("IORING_FEAT_NODROP");
  if ((params.features & IORING_FEAT_EXT_ARG) == 0) note_missing("IORING_FEAT_EXT_ARG");

  KernelSupport support;
  io_uring_probe* probe = io_uring_get_probe_ring(&ring);
  if (probe == nullptr) {
    note_missing("IORING_REGISTER_PROBE");
  } else {
    for (const RequiredOp& required : kRequiredOps) {
      if (!io_uring_opcode_supported(probe, required.op)) note_missing(required.name);
    }
    support.op_ftruncate = io_uring_opcode_supported(probe, kOpFtruncate) != 0;
    support.op_waitid = io_uring_opcode_supported(probe, kOpWaitid) != 0;
    io_uring_free_probe(probe);
  }
  io_uring_queue_exit(&ring);

  if (!missing.empty()) {
    throw std::runtime_error("spindle: io_uring lacks " + missing + "; " + kFix);
  }
  support.single_issuer_defer_taskrun = try_defer_taskrun();
  return support;
}

}  // namespace spindle::uring
