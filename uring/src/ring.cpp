// Ring: spindle's io_uring driver for one worker.
//
// The protocol
// ------------
// Every SQE's user_data is a pointer. For an ordinary operation it points at the
// Operation's Completion base, whose handler forwards the CQE to the ring; for an
// internal request (the wake poll) it points at the requester's Completion; for an
// IORING_OP_ASYNC_CANCEL it is the target Operation's address with bit 0 set
// (records are at least 8-byte aligned, so bit 0 is free). No slab, no ids: the
// record lives, unmoved, on the parked fiber's stack until its on_complete runs,
// and the ring guarantees that nothing refers to it after that.
//
// An operation goes kIdle -> kInFlight -> kIdle:
//  1. submit(): prepare() it now (SQE filled, user_data set, kInFlight,
//     counted). Nothing enters the kernel yet. There is no cap on operations in
//     flight: an operation that waits for ever (an idle connection's RECV)
//     holds kernel memory, not a slot that new work would queue behind. When
//     the SQ is full, the staged SQEs go to the kernel first (sqe()).
//  2. service() / wait(): stage the requested cancels, then make ONE
//     io_uring_enter that submits every staged SQE and collects completions
//     (DEFER_TASKRUN runs completion work only there, on this thread). With
//     nothing to submit, service() enters only when the kernel has flagged
//     completion work (IORING_SETUP_TASKRUN_FLAG): otherwise the call would
//     find nothing.
//  3. dispatch(): copy a batch of CQEs out of the CQ ring, advance the CQ head,
//     then hand each copy to its record, up to the caller's maximum; the rest
//     wait in the CQ for the next call. Copying first makes handlers free to
//     submit, cancel and re-submit (even the operation being completed): nothing
//     they do can disturb the iteration, and the CQ space is returned at once.
//     More completions than the CQ holds wait in the kernel's overflow list
//     (IORING_FEAT_NODROP, required at setup); dispatch() flushes it once the
//     CQ ring is empty.
//
// Cancellation keeps the promise "on_complete runs only when the kernel holds no
// reference to the operation or its buffers":
//  - an operation is put on the cancel list; the next service()/wait()
//    stages an ASYNC_CANCEL for it (cancel_in_kernel_). The operation still ends
//    only through its own CQE (-ECANCELED or its real result, whichever the
//    kernel produced), and if a cancel was staged, only once the cancel's CQE has
//    been reaped too. Finishing on the first of the two would let the cancel's
//    CQE arrive after on_complete, when the record may be gone or re-submitted:
//    the late tag would then hit a dead or a different submission.
//  - if the operation's own CQE arrives before its cancel was staged, the cancel
//    is dropped from the list and never issued.
//
// Alternatives rejected
// ---------------------
//  - Slab indices with generations as user_data (the reference driver): needs a
//    lookup per CQE and an owner for the slab; the stack record plus the two-CQE
//    rule gives the same safety without either.
//  - IORING_OP_TIMEOUT SQEs for wait() timeouts: they consume SQ/CQ space and
//    produce CQEs of their own; the EXT_ARG timeout of io_uring_enter does not.
//  - Finishing a cancelled operation on its own CQE (see above), or blocking
//    until the cancel completes (IORING_REGISTER_SYNC_CANCEL): the first is
//    unsafe, the second stalls the worker.
//  - Iterating CQEs in place with io_uring_for_each_cqe and advancing at the
//    end: the CQ stays full while handlers run, and anything a handler reaches
//    that looks at the CQ sees the same CQEs again. Copying a small batch out
//    first costs a few stores and makes handlers unable to disturb iteration.
//  - A cap on operations in flight (the SQ size) with a FIFO for the rest:
//    every idle connection holds a RECV for as long as it is idle, so once the
//    cap's worth of them wait, every new operation (the next accept, a cancel
//    of one of them) queues behind operations that may never complete. The
//    CQ is what the cap protected, and IORING_FEAT_NODROP already keeps the
//    completions it cannot hold.
//
// Thread-safety: everything here is worker-affine. The kernel enforces it too:
// with IORING_SETUP_SINGLE_ISSUER, io_uring_enter from another thread fails with
// EEXIST, which service()/wait() treat as fatal.

#include "spindle/uring/ring.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>

#include "spindle/base/assert.hpp"

namespace spindle::uring {
namespace {

constexpr unsigned kMaxEntries = 32768;
// Bit 0 of user_data marks the CQE of an IORING_OP_ASYNC_CANCEL; the rest is the
// target Operation's address. A null address is the destructor's cancel-all.
constexpr std::uint64_t kCancelTag = 1;
constexpr std::uint64_t kCancelAllUserData = kCancelTag;
// CQEs copied out of the CQ ring per round in dispatch().
constexpr std::size_t kDispatchBatch = 32;

static_assert(alignof(Operation) >= 2, "bit 0 of an Operation's address tags cancel CQEs");
static_assert(alignof(Completion) >= 2, "bit 0 of a Completion's address tags cancel CQEs");

// Set by the first ring that had to fall back to COOP_TASKRUN; rings are
// created on several workers at once, hence atomic (relaxed: it only dedups a
// diagnostic).
std::atomic<bool> g_coop_fallback_noted{false};

std::string setup_failure_message(int err, unsigned entries) {
  std::string msg =
      "spindle: io_uring could not be set up (ring of " + std::to_string(entries) + " entries): ";
  switch (err) {
    case EPERM:
    case ENOSYS:
      msg +=
          "io_uring is disabled for this process; check the kernel.io_uring_disabled sysctl "
          "(0 allows it) and the seccomp policy of the container or sandbox";
      break;
    case ENOMEM:
      msg +=
          "not enough memory for the ring; check RLIMIT_MEMLOCK (ulimit -l), the cgroup memory "
          "limit, or use fewer or smaller rings";
      break;
    case EMFILE:
    case ENFILE:
      msg += "out of file descriptors";
      break;
    case EINVAL:
      msg += "the kernel rejected the ring parameters; spindle needs Linux 6.1 or newer";
      break;
    default:
      msg += "spindle needs Linux 6.1 or newer with io_uring enabled";
      break;
  }
  return msg;
}

}  // namespace

void Ring::check_enter_result(int ret) const noexcept {
  // The caller reaps what is there and the next turn retries the submission.
  if (ret >= 0 || ret == -EINTR || ret == -EAGAIN || ret == -EBUSY || ret == -ETIME) return;
  write_log(
      log_, LogLevel::kError,
      std::string("io_uring service failed: ") + std::strerror(-ret) +
          (ret == -EEXIST ? " (the ring was used from a thread other than the one that created it; "
                            "rings are IORING_SETUP_SINGLE_ISSUER)"
           : ret == -EBADR
               ? " (the kernel dropped completions: its completion queue was full and it "
                 "could not allocate memory to hold more; the operations they belonged "
                 "to can never end)"
               : ""));
  std::abort();
}

Ring::Ring(const RingOptions& options) : log_(options.log), entries_(options.entries) {
  if (entries_ == 0 || entries_ > kMaxEntries || (entries_ & (entries_ - 1)) != 0) {
    throw std::invalid_argument(
        "spindle: ring entries must be a power of two between 1 and 32768, got " +
        std::to_string(entries_));
  }
  // TASKRUN_FLAG: the kernel flags queued completion work in the SQ ring's
  // flags, which work_visible() reads (Linux 5.19, like COOP_TASKRUN).
  constexpr unsigned kCommonFlags =
      IORING_SETUP_SUBMIT_ALL | IORING_SETUP_CQSIZE | IORING_SETUP_TASKRUN_FLAG;
  io_uring_params params{};
  params.flags = kCommonFlags | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
  params.cq_entries = 2 * entries_;
  int ret = io_uring_queue_init_params(entries_, &ring_, &params);
  defer_taskrun_ = ret == 0;
  if (ret == -EINVAL) {
    params = io_uring_params{};
    params.flags = kCommonFlags | IORING_SETUP_COOP_TASKRUN;
    params.cq_entries = 2 * entries_;
    ret = io_uring_queue_init_params(entries_, &ring_, &params);
    if (ret == 0 && !g_coop_fallback_noted.exchange(true, std::memory_order_relaxed)) {
      write_log(log_, LogLevel::kInfo,
                "the kernel refused IORING_SETUP_SINGLE_ISSUER|IORING_SETUP_DEFER_TASKRUN "
                "(Linux 6.1+); rings use IORING_SETUP_COOP_TASKRUN instead");
    }
  }
  if (ret < 0) {
    throw std::system_error(-ret, std::system_category(), setup_failure_message(-ret, entries_));
  }
  const bool nodrop = (params.features & IORING_FEAT_NODROP) != 0;
  const bool ext_arg = (params.features & IORING_FEAT_EXT_ARG) != 0;
  if (!nodrop || !ext_arg) {
    io_uring_queue_exit(&ring_);
    std::string missing = !nodrop && !ext_arg ? "IORING_FEAT_NODROP and IORING_FEAT_EXT_ARG"
                          : !nodrop           ? "IORING_FEAT_NODROP"
                                              : "IORING_FEAT_EXT_ARG";
    throw std::runtime_error("spindle: io_uring lacks " + missing +
                             "; spindle needs Linux 6.1 or newer");
  }
  // Optional: a registered ring fd spares every io_uring_enter the lookup of
  // the fd and the reference count on its file (which a multi-threaded
  // process takes and drops per call). A thread has 16 such slots; a ring
  // that finds none free works the same, unregistered. The registration is
  // the creating thread's, the one thread that uses the ring;
  // io_uring_queue_exit releases it.
  io_uring_register_ring_fd(&ring_);
}

Ring::~Ring() {
  if (pending() != 0 || cancels_in_kernel_ != 0) drain_for_destruction();
  io_uring_queue_exit(&ring_);
}

// Closing the ring fd with requests in flight would leave their teardown to the
// kernel's asynchronous ring-exit work, which may still touch buffers after we
// return; so cancel everything and wait for every operation's completion here.
void Ring::drain_for_destruction() noexcept {
  closing_ = true;
  if (in_flight_ != 0) {
    // Per-operation cancels need the list of in-flight operations, which the
    // ring does not keep; one CANCEL_ANY reaches them all (and internal
    // requests too, whose handlers then see their final CQE). CANCEL_ANY is
    // Linux 5.19, as is COOP_TASKRUN: every ring we could set up has it.
    io_uring_sqe* s = sqe();
    io_uring_prep_cancel64(s, 0, IORING_ASYNC_CANCEL_ANY);
    io_uring_sqe_set_data64(s, kCancelAllUserData);
    ++cancels_in_kernel_;
  }
  while (pending() != 0 || cancels_in_kernel_ != 0) wait(std::nullopt);
}

void Ring::submit(Operation* op) noexcept {
  SPINDLE_ASSERT(op != nullptr);
  SPINDLE_ASSERT(op->state_ == Operation::State::kIdle,
                 "submit() of an operation that is already in flight");
  SPINDLE_ASSERT(!closing_, "submit() on a ring that is being destroyed");
  op->ring_ = this;
  op->next_ = nullptr;
  op->prev_ = nullptr;
  op->result_ = 0;
  op->flags_ = 0;
  op->cancel_requested_ = false;
  op->cancel_listed_ = false;
  op->cancel_in_kernel_ = false;
  op->own_cqe_ = false;
  prepare(op);
}

void Ring::cancel(Operation* op) noexcept {
  SPINDLE_ASSERT(op != nullptr);
  switch (op->state_) {
    case Operation::State::kIdle:
      return;
    case Operation::State::kInFlight:
      SPINDLE_ASSERT(op->ring_ == this, "cancel() on a ring the operation was not submitted to");
      if (op->cancel_requested_) return;
      // Invariant: an in-flight op holding its own CQE is waiting for its cancel's
      // CQE, so it had cancel_requested_ set and returned above.
      SPINDLE_ASSERT(!op->own_cqe_);
      op->cancel_requested_ = true;
      op->cancel_listed_ = true;
      op->prev_ = nullptr;
      op->next_ = cancel_head_;
      if (cancel_head_ != nullptr) cancel_head_->prev_ = op;
      cancel_head_ = op;
      return;
  }
}

bool Ring::work_visible() const noexcept {
  if (cancel_head_ != nullptr || io_uring_sq_ready(&ring_) != 0 || io_uring_cq_ready(&ring_) != 0) {
    return true;
  }
  return (kernel_flags() & (IORING_SQ_TASKRUN | IORING_SQ_CQ_OVERFLOW)) != 0;
}

unsigned Ring::kernel_flags() const noexcept {
  // relaxed: a set flag only sends the caller into io_uring_enter, which
  // runs the work and orders what follows.
  return __atomic_load_n(ring_.sq.kflags, __ATOMIC_RELAXED);
}

std::size_t Ring::service(std::size_t max_completions) noexcept {
  SPINDLE_ASSERT(!dispatching_, "service() called from a completion handler");
  stage_cancels();
  if (io_uring_cq_ready(&ring_) >= max_completions) {
    // Enough CQEs wait already: submit without running completion work,
    // which would only post more behind them.
    if (io_uring_sq_ready(&ring_) != 0) check_enter_result(io_uring_submit(&ring_));
  } else if (enter_finds_work()) {
    check_enter_result(io_uring_submit_and_get_events(&ring_));
  }
  // CQEs already in the CQ ring (a flush of a full SQ) go out even when the
  // system call was skipped.
  return dispatch(max_completions);
}

bool Ring::enter_finds_work() const noexcept {
  if (io_uring_sq_ready(&ring_) != 0) return true;
  if (in_flight_ == 0 && cancels_in_kernel_ == 0 && internal_outstanding_ == 0) return false;
  // With DEFER_TASKRUN a completion reaches the CQ only inside
  // io_uring_enter, and the kernel flags the completion work it queues for
  // it (work_visible()), including what an enter leaves for the next one
  // (it runs a bounded batch per call): an enter with neither would find
  // nothing.
  return !defer_taskrun_ || work_visible();
}

std::size_t Ring::wait(std::optional<std::chrono::nanoseconds> timeout, std::size_t completions,
                       std::size_t max_completions) noexcept {
  SPINDLE_ASSERT(!dispatching_, "wait() called from a completion handler");
  stage_cancels();
  __kernel_timespec ts{};
  __kernel_timespec* tsp = nullptr;
  if (timeout.has_value()) {
    const std::int64_t ns = std::max<std::int64_t>(timeout->count(), 0);
    ts.tv_sec = ns / 1'000'000'000;
    ts.tv_nsec = ns % 1'000'000'000;
    tsp = &ts;
  }
  // With IORING_FEAT_EXT_ARG (checked at setup) liburing passes the timeout to
  // io_uring_enter itself instead of queueing an IORING_OP_TIMEOUT SQE. The
  // return value may be positive (SQEs submitted) with no CQE; dispatch() looks
  // at the CQ ring regardless.
  // The thread sleeps in the kernel until wait_nr CQEs are ready, not
  // through each one.
  const auto wait_nr = static_cast<unsigned>(
      std::clamp<std::size_t>(completions, 1, std::max<std::size_t>(in_flight_, 1)));
  io_uring_cqe* cqe = nullptr;
  check_enter_result(io_uring_submit_and_wait_timeout(&ring_, &cqe, wait_nr, tsp, nullptr));
  return dispatch(max_completions);
}

io_uring_sqe* Ring::internal_sqe(Completion* c) noexcept {
  SPINDLE_ASSERT(c != nullptr);
  SPINDLE_ASSERT((reinterpret_cast<std::uintptr_t>(c) & kCancelTag) == 0);
  io_uring_sqe* s = sqe();
  // liburing's io_uring_prep_* helpers never write user_data, so the caller
  // may prepare the SQE after this.
  io_uring_sqe_set_data(s, c);
  ++internal_outstanding_;
  return s;
}

void Ring::prepare(Operation* op) noexcept {
  io_uring_sqe* s = sqe();
  op->prepare_(op, s);
  io_uring_sqe_set_data(s, static_cast<Completion*>(op));
  op->state_ = Operation::State::kInFlight;
  ++in_flight_;
}

void Ring::stage_cancels() noexcept {
  while (cancel_head_ != nullptr) {
    Operation* op = cancel_head_;
    cancel_list_unlink(op);
    // Invariant: listed ops are in flight without their own CQE (on_op_cqe
    // unlinks an op whose CQE arrives first).
    SPINDLE_ASSERT(op->state_ == Operation::State::kInFlight && !op->own_cqe_);
    const auto addr = reinterpret_cast<std::uintptr_t>(op);
    SPINDLE_ASSERT((addr & kCancelTag) == 0, "operation record is not 2-byte aligned");
    io_uring_sqe* s = sqe();
    io_uring_prep_cancel64(s, reinterpret_cast<std::uintptr_t>(static_cast<Completion*>(op)), 0);
    io_uring_sqe_set_data64(s, addr | kCancelTag);
    op->cancel_in_kernel_ = true;
    ++cancels_in_kernel_;
  }
}

std::size_t Ring::dispatch(std::size_t max) noexcept {
  struct Reaped {
    std::uint64_t user_data;
    int res;
    std::uint32_t flags;
  };
  dispatching_ = true;
  std::size_t handled = 0;
  bool overflow_flushed = false;
  while (handled < max) {
    const unsigned ready = io_uring_cq_ready(&ring_);
    if (ready == 0) {
      // The kernel's CQ overflow list (IORING_FEAT_NODROP) moves into an
      // emptied CQ ring only inside io_uring_enter: once per dispatch.
      // (liburing's peek would also enter for IORING_SQ_TASKRUN, which
      // service() and wait() already handle.)
      if (overflow_flushed || (kernel_flags() & IORING_SQ_CQ_OVERFLOW) == 0) break;
      overflow_flushed = true;
      check_enter_result(io_uring_get_events(&ring_));
      continue;
    }
    const unsigned n =
        static_cast<unsigned>(std::min<std::size_t>({ready, kDispatchBatch, max - handled}));
    const unsigned head = *ring_.cq.khead;
    Reaped batch[kDispatchBatch];
    for (unsigned i = 0; i < n; ++i) {
      const io_uring_cqe& cqe = ring_.cq.cqes[(head + i) & ring_.cq.ring_mask];
      batch[i] = Reaped{cqe.user_data, cqe.res, cqe.flags};
    }
    io_uring_cq_advance(&ring_, n);
    for (unsigned i = 0; i < n; ++i) {
      const Reaped& r = batch[i];
      if ((r.user_data & kCancelTag) != 0) {
        on_cancel_cqe(reinterpret_cast<Operation*>(r.user_data & ~kCancelTag), r.res);
        continue;
      }
      SPINDLE_ASSERT(r.user_data != 0 && r.user_data != LIBURING_UDATA_TIMEOUT,
                     "CQE without a completion record");
      auto* c = reinterpret_cast<Completion*>(r.user_data);
      if (c->handler != &Operation::on_cqe && (r.flags & IORING_CQE_F_MORE) == 0) {
        SPINDLE_ASSERT(internal_outstanding_ != 0, "final CQE of an unknown internal request");
        --internal_outstanding_;
      }
      c->handler(c, r.res, r.flags);  // may free c: not touched again
    }
    handled += n;
  }
  dispatching_ = false;
  return handled;
}

void Ring::on_op_cqe(Operation* op, int res, std::uint32_t flags) noexcept {
  SPINDLE_ASSERT(op->ring_ == this && op->state_ == Operation::State::kInFlight && !op->own_cqe_,
                 "CQE for an operation that is not in flight on this ring");
  SPINDLE_ASSERT((flags & IORING_CQE_F_MORE) == 0, "multishot request submitted through Operation");
  op->result_ = res;
  op->flags_ = flags;
  op->own_cqe_ = true;
  --in_flight_;
  if (op->cancel_listed_) cancel_list_unlink(op);  // completed first: never issue the cancel
  if (op->cancel_in_kernel_) {
    ++awaiting_cancel_;  // finished by on_cancel_cqe
    return;
  }
  finish(op);
}

void Ring::on_cancel_cqe(Operation* op, int res) noexcept {
  SPINDLE_ASSERT(res != -EINVAL, "the kernel rejected spindle's IORING_OP_ASYNC_CANCEL (EINVAL)");
  SPINDLE_ASSERT(cancels_in_kernel_ != 0);
  --cancels_in_kernel_;
  if (op == nullptr) return;  // the destructor's CANCEL_ANY: res counts what it hit
  // 0: cancelled; -ENOENT: already completed; -EALREADY: running, it will end
  // on its own. Anything else is unexpected but harmless: the op's own CQE
  // still decides its fate.
  if (res != 0 && res != -ENOENT && res != -EALREADY) {
    write_log(log_, LogLevel::kWarning,
              std::string("IORING_OP_ASYNC_CANCEL failed: ") + std::strerror(-res));
  }
  SPINDLE_ASSERT(
      op->ring_ == this && op->state_ == Operation::State::kInFlight && op->cancel_in_kernel_,
      "cancel CQE for an operation with no cancel outstanding");
  op->cancel_in_kernel_ = false;
  if (op->own_cqe_) {
    --awaiting_cancel_;
    finish(op);
  }
}

void Ring::finish(Operation* op) noexcept {
  op->state_ = Operation::State::kIdle;
  op->own_cqe_ = false;
  op->cancel_listed_ = false;
  op->cancel_in_kernel_ = false;
  const int res = op->result_;
  const std::uint32_t flags = op->flags_;
  // The handler may re-submit op, submit or cancel others, or end op's
  // lifetime: op is not touched after this call.
  op->on_complete_(op, res, flags);
}

io_uring_sqe* Ring::sqe() noexcept {
  io_uring_sqe* s = io_uring_get_sqe(&ring_);
  if (s == nullptr) {
    // The SQ holds entries() SQEs: hand what is staged to the kernel and go
    // on. SUBMIT_ALL makes the kernel take all of them.
    const int ret = io_uring_submit(&ring_);
    if (ret < 0) {
      write_log(log_, LogLevel::kError,
                std::string("flushing a full io_uring SQ failed: ") + std::strerror(-ret));
    }
    s = io_uring_get_sqe(&ring_);
    SPINDLE_ASSERT(s != nullptr, "no SQE after flushing a full submission queue");
  }
  // SQEs are reused without clearing; a prepare function that sets fields by
  // hand must not inherit the previous request's.
  std::memset(s, 0, sizeof(*s));
  return s;
}

void Ring::cancel_list_unlink(Operation* op) noexcept {
  if (op->prev_ != nullptr) {
    op->prev_->next_ = op->next_;
  } else {
    cancel_head_ = op->next_;
  }
  if (op->next_ != nullptr) op->next_->prev_ = op->prev_;
  op->next_ = nullptr;
  op->prev_ = nullptr;
  op->cancel_listed_ = false;
}

}  // namespace spindle::uring
