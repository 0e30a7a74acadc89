// UringDriver: the io_uring backend. Each operation is one SQE on the
// worker's ring, whose CQE completes it.
#pragma once

#include <optional>

#include "io/buffer_pool.hpp"
#include "io/driver.hpp"
#include "io/request.hpp"
#include "spindle/uring/buffer_ring.hpp"
#include "spindle/uring/operation.hpp"
#include "spindle/uring/ring.hpp"
#include "spindle/uring/wake_source.hpp"

namespace spindle::detail {

// An operation as one SQE: the request of its fiber, and the ring's record
// of it. On the fiber's stack.
struct UringRequest final : IoRequest, uring::Operation {
  UringRequest(IoDriver& d, Fiber* f, const IoOp& o, const IoOptions& options) noexcept
      : IoRequest(d, f, o, options), uring::Operation(&prepare, &on_cqe) {}

  // Fills the SQE, in Ring::submit.
  static void prepare(uring::Operation* self, io_uring_sqe* sqe) noexcept;
  // On the owning worker, when the CQE (and any cancel's CQE) arrived.
  static void on_cqe(uring::Operation* self, int res, std::uint32_t flags) noexcept;

  // Submitted from the fiber's turn, which has not switched away: a CQE
  // then only records the result and clears this.
  bool in_turn = false;
};

// Worker-affine: the ring is single-issuer.
class UringDriver final : public IoDriver {
 public:
  // Throws what Ring's constructor throws. `self`: its worker.
  UringDriver(const Config& config, EventFd& wake, const WorkerRemote& self);

  const char* name() const noexcept override { return "io_uring"; }
  void service(std::size_t max) noexcept override {
    refill();
    ring_.service(max);
  }
  void wait(std::optional<std::chrono::nanoseconds> timeout, std::size_t completions,
            std::size_t max) noexcept override;
  bool work_visible() const noexcept override { return ring_.work_visible(); }
  bool sees_completions() const noexcept override { return true; }
  // kRecvPooled only with a buffer ring.
  bool supports(IoCode code) const noexcept override;
  Result<int> perform(Fiber* f, const IoOp& op, const IoOptions& options) noexcept override;
  // perform() itself, which run_io calls without the virtual dispatch when
  // its worker's backend is this one (uring()): inlined there.
  // `w`: the worker running `f`, whose backend this is.
  [[gnu::always_inline]] Result<int> run(Worker& w, Fiber* f, const IoOp& op,
                                         const IoOptions& options) noexcept {
    if (auto refused = refusal(*this, f, options)) [[unlikely]]
      return failure(*refused);
    if ((op.code == IoCode::kFtruncate || op.code == IoCode::kWaitid) && !supports(op.code))
        [[unlikely]] {
      return perform_without_opcode(f, op, options);
    }
    return issue(w, f, op, options);
  }
  void cancel(IoRequest& r) noexcept override;
  // On the worker, for a CQE of `op` with `res` whose `cqe_flags` carry a
  // pool buffer: lends the bytes to the caller of the pooled receive.
  void received(const IoOp& op, int res, std::uint32_t cqe_flags) noexcept;
  // Nothing of this backend goes to the blocking pool by message.
  void offload_done(Fiber* fiber) noexcept override;

 private:
  // `op` as one SQE. When the worker has nothing else to run, the fiber
  // submits it itself and collects what the kernel completes at once
  // (complete_in_turn); it parks only if its own CQE is not among them.
  // Otherwise it parks at once and the SQE goes out with the worker's batch.
  [[gnu::always_inline]] Result<int> issue(Worker& w, Fiber* f, const IoOp& op,
                                           const IoOptions& options) noexcept {
    UringRequest r(*this, f, op, options);
    count_started();
    if (!op.expect_wait && w.take_io_turn()) {
      if (complete_in_turn(w, r)) return io_result(r);
      park_on_io(r, &published_in_turn);
    } else {
      park_on_io(r, &publish);
    }
    return io_result(r);
  }
  // Submits `r` and services the ring from the fiber's turn; true if `r`
  // completed there (nothing of it remains in the kernel).
  bool complete_in_turn(Worker& w, UringRequest& r) noexcept;
  // An operation whose opcode this kernel's ring lacks (supports() is false).
  [[gnu::noinline]] Result<int> perform_without_opcode(Fiber* f, const IoOp& op,
                                                       const IoOptions& options) noexcept;
  static void publish(void* request) noexcept;
  // publish() of a request that complete_in_turn() submitted already.
  static void published_in_turn(void* request) noexcept;
  // Hands the pool's free buffers, if it may have any, to the kernel's
  // buffer ring, if there is one.
  void refill() noexcept {
    if (buffer_ring_ && receive_pool_->may_have_free()) [[unlikely]]
      hand_back();
  }
  void hand_back() noexcept;

  EventFd& wake_;
  uring::WakeSource wake_poll_;  // before ring_, which must be destroyed first
  // Before ring_: buffers still come back while ring_'s destructor drains
  // it. Only with buffer_ring_.
  BufferPool::Handle receive_pool_;
  uring::Ring ring_;
  // The pool's buffers for pooled receives (buffer group kReceiveGroup);
  // none if the kernel refused the ring. Destroyed before ring_.
  std::optional<uring::BufferRing> buffer_ring_;
};

std::unique_ptr<IoBackend> make_uring_backend(Scheduler& scheduler, WorkerRemote& self,
                                              EventFd& wake);

}  // namespace spindle::detail
