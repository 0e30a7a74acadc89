// Operation: the Completion record of one I/O request. The state machine
// itself lives in ring.cpp; this file only routes an operation's CQE there.

#include "spindle/uring/operation.hpp"

#include "spindle/base/assert.hpp"
#include "spindle/uring/ring.hpp"

namespace spindle::uring {

// Runs on the ring's thread, from Ring::dispatch(). Ring::dispatch() also uses
// this function's address to tell operations from internal requests.
void Operation::on_cqe(Completion* self, int res, std::uint32_t flags) noexcept {
  auto* op = static_cast<Operation*>(self);
  SPINDLE_ASSERT(op->ring_ != nullptr, "CQE for an operation that was never submitted");
  op->ring_->on_op_cqe(op, res, flags);
}

}  // namespace spindle::uring
