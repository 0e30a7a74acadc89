// IoRequest: a fiber's ring operation while it is parked on it.
#pragma once

#include <cstdint>

#include "spindle/sched/detail/fiber.hpp"
#include "spindle/uring/operation.hpp"
#include "time/timeout_wheel.hpp"

namespace spindle::detail {

class Worker;

struct IoRequest;

// The wheel entry of an IoRequest, with the way back to it.
struct IoDeadline : WheelEntry {
  IoRequest* request = nullptr;
};

// Lives on the parked fiber's stack. Worker-affine: from submit to
// completion it belongs to the worker whose ring holds it.
struct IoRequest : uring::Operation {
  using PrepareFn = void (*)(void* ctx, io_uring_sqe* sqe) noexcept;

  IoRequest(PrepareFn fn, void* ctx, bool cancellable) noexcept;

  PrepareFn prepare_fn;
  void* prepare_ctx;
  Fiber* fiber = nullptr;
  std::uint64_t epoch = 0;
  Deadline deadline = kNoDeadline;
  IoDeadline deadline_entry;
  int result = 0;
  std::uint32_t cqe_flags = 0;
  // The SQE's opcode once prepared, for dumps; kNotPrepared while queued.
  static constexpr std::uint8_t kNotPrepared = 0xff;
  std::uint8_t opcode = kNotPrepared;
  const bool cancellable;
  bool timed_out = false;  // the deadline expired and cancelled it
  bool aborted = false;    // an abort cancelled it
};

// The worker's wheel reports an expired deadline.
void on_io_deadline(WheelEntry* entry) noexcept;
// A CancelIo message reached the owning worker.
void cancel_io(Worker& owner, Fiber* fiber, std::uint64_t epoch) noexcept;

}  // namespace spindle::detail
