// Mailbox: what other threads hand to one worker: fibers pinned to it that
// were woken elsewhere, requests to cancel an operation on its I/O backend,
// and operations of its backend that the blocking pool finished.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "park/parker.hpp"
#include "spindle/base/thread_annotations.hpp"
#include "spindle/sched/detail/fiber.hpp"
#include "spindle/sched/detail/spinlock.hpp"

namespace spindle::detail {

struct MailMessage {
  enum class Kind : std::uint8_t {
    kResume,    // `fiber` (pinned to this worker) is ready
    kAdopt,     // `fiber` (not pinned) is ready and moves to this worker
    kCancelIo,  // cancel the op `fiber` waits on in park `epoch`; holds a fiber reference
    kIoDone,    // the blocking pool finished the op `fiber` is parked on (park `epoch`)
  };
  Kind kind;
  Fiber* fiber;
  std::uint64_t epoch;
};

// send() is thread-safe; take() is called by the owning worker only.
// A send that makes the inbox non-empty unparks the worker: one wake per batch.
class Mailbox {
 public:
  explicit Mailbox(Parker& parker) noexcept : parker_(parker) {}

  void send(const MailMessage& m) noexcept;
  // Swaps the pending batch into `out` (which must be empty).
  void take(std::vector<MailMessage>& out) noexcept;
  bool empty() const noexcept { return !nonempty_.load(std::memory_order_acquire); }

 private:
  SpinLock lock_;
  std::vector<MailMessage> inbox_ SPINDLE_GUARDED_BY(lock_);
  // release under lock_; pairs with the acquire in empty().
  std::atomic<bool> nonempty_{false};
  Parker& parker_;
};

}  // namespace spindle::detail
