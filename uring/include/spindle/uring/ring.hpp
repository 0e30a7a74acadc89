// Ring: one io_uring instance: batched submission, CQE dispatch and
// cancellation, with no cap on operations in flight.
// Worker-affine (see Ring). uring/ knows nothing of fibers: nothing here
// suspends one. wait(), and the destructor while operations are pending,
// block the calling thread; every other call returns without waiting.
#pragma once

#include <liburing.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "spindle/base/log.hpp"
#include "spindle/uring/operation.hpp"

namespace spindle::uring {

struct RingOptions {
  // Submission queue size: the SQEs one io_uring_enter hands to the kernel (a
  // fuller SQ is submitted early). A power of two in [1, 32768]. The
  // completion queue is twice as large. Neither caps the operations in flight.
  unsigned entries = 1024;
  // Where the ring's messages go (empty: stderr), on the ring's thread.
  LogSink log{};
};

// Worker-affine: created on, and used only from, one thread (the ring is set up
// IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN; if the kernel refuses
// that, IORING_SETUP_COOP_TASKRUN, with a note on stderr once per process).
//
// Operations in flight are bounded by memory alone: each submit() prepares its
// SQE at once, and completions beyond the CQ's size wait in the kernel's
// overflow list (IORING_FEAT_NODROP) until dispatch() makes room. If the kernel
// cannot allocate that list it drops completions and io_uring_enter says
// EBADR; the ring then aborts the process, naming the cause, since operations
// would never end.
//
// Completion handlers (Operation's on_complete, Completion::handler) run inside
// service(), wait() or cancel(); they may submit() and cancel() operations,
// including re-submitting their own, but must not call service() or wait().
class Ring {
 public:
  // Throws std::invalid_argument (naming "ring entries") for a bad size and
  // std::system_error with a message saying what is missing when the kernel
  // cannot provide a ring.
  explicit Ring(const RingOptions& options);
  // With operations still pending, the destructor cancels them all and waits
  // for their completions (each on_complete runs, with -ECANCELED or a real
  // result), so no buffer is touched after it returns; it must then run on the
  // ring's thread, and it blocks until every operation ends. That cancel also
  // reaches internal requests, whose handlers may then run: their Completions
  // (the WakeSource) must still be alive. With nothing pending it only closes
  // the ring, which tears internal requests down without callbacks.
  ~Ring();
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  // Prepares the SQE of `op` (which must be kIdle) now; it is handed to the
  // kernel by the next service() or wait(), or earlier if the SQ fills.
  void submit(Operation* op) noexcept;

  // Requests cancellation of `op`: an IORING_OP_ASYNC_CANCEL at the next
  // service() or wait(); it still completes through its own CQE (with
  // -ECANCELED or its real result). No-op for a kIdle op or a repeated cancel.
  void cancel(Operation* op) noexcept;

  // Stages pending cancels, submits every staged SQE and dispatches the CQEs
  // available, at most `max_completions` of them (the rest wait in the CQ for
  // the next call), with one io_uring_enter: none if nothing is staged and
  // nothing outstanding could have completed (with DEFER_TASKRUN: the kernel
  // has flagged no completion work, see work_visible()); one without
  // collecting completions if the CQ already holds `max_completions`; one
  // more only to flush a full SQ or the kernel's CQ overflow list. Returns
  // the CQEs handled.
  std::size_t service(std::size_t max_completions = SIZE_MAX) noexcept;

  // Like service(), but blocks until `completions` CQEs are ready (at most as
  // many as operations are in flight, at least one) or `timeout` passes (no
  // timeout: wait indefinitely). Uses the EXT_ARG timeout, never a timeout SQE.
  std::size_t wait(std::optional<std::chrono::nanoseconds> timeout, std::size_t completions = 1,
                   std::size_t max_completions = SIZE_MAX) noexcept;

  // Whether service() would find work at once, read from the shared rings
  // without a system call: SQEs or cancels staged, CQEs posted, completion
  // work the kernel has queued for this ring's thread (IORING_SQ_TASKRUN,
  // set as it queues the first of such work and cleared when the thread
  // runs it in io_uring_enter, set again if it leaves some for later), or an
  // overflowed CQ.
  bool work_visible() const noexcept;

  // An SQE for an internal request whose user_data is `c`; flushes the
  // SQ first if it is full. Submitted by the next service() or wait().
  io_uring_sqe* internal_sqe(Completion* c) noexcept;

  // Operations submitted whose on_complete has not run yet (in flight, or
  // holding their own CQE while their cancel's CQE is outstanding); not
  // counting internal SQEs.
  std::size_t pending() const noexcept { return in_flight_ + awaiting_cancel_; }
  // Operations prepared whose own CQE is not yet reaped.
  std::size_t in_flight() const noexcept { return in_flight_; }
  unsigned entries() const noexcept { return entries_; }
  bool defer_taskrun() const noexcept { return defer_taskrun_; }
  int fd() const noexcept { return ring_.ring_fd; }

 private:
  friend class Operation;
  friend class BufferRing;
  void prepare(Operation* op) noexcept;  // into an SQE; op becomes kInFlight
  void stage_cancels() noexcept;
  // service()'s test before its io_uring_enter.
  bool enter_finds_work() const noexcept;
  unsigned kernel_flags() const noexcept;  // the SQ ring's flags word
  std::size_t dispatch(std::size_t max) noexcept;
  void finish(Operation* op) noexcept;
  io_uring_sqe* sqe() noexcept;
  void on_op_cqe(Operation* op, int res, std::uint32_t flags) noexcept;
  void on_cancel_cqe(Operation* op, int res) noexcept;
  void cancel_list_unlink(Operation* op) noexcept;
  void drain_for_destruction() noexcept;

  // io_uring_enter failures that leave the ring usable return; any other is
  // logged through log_ and aborts the process.
  void check_enter_result(int ret) const noexcept;

  io_uring ring_{};
  const LogSink log_;
  unsigned entries_ = 0;
  bool defer_taskrun_ = false;
  bool dispatching_ = false;  // inside dispatch(): handlers may not service()/wait()
  bool closing_ = false;      // inside ~Ring(): no new submissions
  // Invariant: in_flight_ == number of kInFlight ops whose own CQE is not yet
  // reaped.
  std::size_t in_flight_ = 0;
  // kInFlight ops whose own CQE was reaped but whose cancel's CQE was not.
  std::size_t awaiting_cancel_ = 0;
  // ASYNC_CANCEL SQEs staged or submitted whose CQE was not yet reaped.
  std::size_t cancels_in_kernel_ = 0;
  // Internal requests (internal_sqe) that have not yet posted their final CQE
  // (one without IORING_CQE_F_MORE).
  std::size_t internal_outstanding_ = 0;
  // In-flight ops whose cancel is not yet staged, doubly linked through their
  // next_/prev_.
  Operation* cancel_head_ = nullptr;
};

}  // namespace spindle::uring
