// Completion records: what every SQE's user_data points to.
// Worker-affine, like the Ring they are used with. uring/ knows nothing of
// fibers: nothing here suspends or blocks; sched/'s io_op parks the fiber
// whose Operation is in flight.
#pragma once

#include <cstdint>

struct io_uring_sqe;

namespace spindle::uring {

class Ring;

// The target of an SQE's user_data. `handler` runs on the ring's thread when the
// CQE is reaped. Used directly only for internal SQEs (the wake poll);
// ordinary I/O goes through Operation. Worker-affine, like the ring it is used
// with. Its address has bit 0 clear (pointer alignment): the ring tags cancel
// CQEs with that bit.
struct Completion {
  using Handler = void (*)(Completion* self, int res, std::uint32_t flags) noexcept;
  explicit Completion(Handler h) noexcept : handler(h) {}
  Handler handler;
};

// One I/O operation submitted through Ring::submit. Worker-affine: owned by the
// ring's thread from submit() until `on_complete` runs. The record must stay
// alive and unmoved until then; spindle keeps it on the parked fiber's stack.
//
// `prepare` fills the SQE, inside submit().
// `on_complete` runs exactly once per submit(), on the ring's thread, when the
// operation's own CQE has arrived and, if it was cancelled while in flight, the
// cancel's CQE too: after it runs, the kernel holds no reference to the
// operation or its buffers. One submission is one SQE and one CQE: multishot
// requests do not go through Operation.
class Operation : private Completion {
 public:
  using Prepare = void (*)(Operation* self, io_uring_sqe* sqe) noexcept;
  using OnComplete = void (*)(Operation* self, int res, std::uint32_t flags) noexcept;

  enum class State : std::uint8_t {
    kIdle,      // not submitted, or completed
    kInFlight,  // SQE staged or submitted; CQE not yet handled
  };

  Operation(Prepare prepare, OnComplete on_complete) noexcept
      : Completion(&Operation::on_cqe), prepare_(prepare), on_complete_(on_complete) {}
  Operation(const Operation&) = delete;
  Operation& operator=(const Operation&) = delete;

  State state() const noexcept { return state_; }
  // True once cancel() was called during the current submission (still true
  // while its on_complete runs; cleared by the next submit()).
  bool cancel_requested() const noexcept { return cancel_requested_; }

 private:
  friend class Ring;
  static void on_cqe(Completion* self, int res, std::uint32_t flags) noexcept;

  Prepare prepare_;
  OnComplete on_complete_;
  Ring* ring_ = nullptr;
  Operation* next_ = nullptr;  // cancel-list links, owned by ring_
  Operation* prev_ = nullptr;
  int result_ = 0;
  std::uint32_t flags_ = 0;
  State state_ = State::kIdle;
  bool cancel_requested_ = false;  // cancel() called while in flight
  bool cancel_listed_ = false;     // on the ring's list of cancels to stage
  bool cancel_in_kernel_ = false;  // ASYNC_CANCEL staged; its CQE not yet reaped
  bool own_cqe_ = false;           // the operation's own CQE has been reaped
};

}  // namespace spindle::uring
