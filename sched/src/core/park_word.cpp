#include "core/park_word.hpp"

#include "core/scheduler.hpp"
#include "core/worker_remote.hpp"
#include "time/timer_heap.hpp"

namespace spindle::detail {

bool confirm_io_abort(Fiber& f, std::uint64_t epoch) noexcept {
  // acquire; pairs with end_io_park's release store: the abort set the flag
  // before it sent the message, so only that store can have cleared it since.
  const std::uint64_t w = f.wake_word.load(std::memory_order_acquire);
  if (!(w & kParkAborted)) {
    f.deliver_abort();
    return false;
  }
  return w == (park_word(epoch, ParkKind::kIo) | kParkAborted);
}

void Fiber::deliver_abort() noexcept {
  // seq_cst; pairs with the compare-exchange in arm_park.
  const std::uint64_t w = wake_word.fetch_or(kParkAborted, std::memory_order_seq_cst);
  switch (park_kind(w)) {
    case ParkKind::kInterruptible:
      wake_fiber(this, park_epoch(w), WakeReason::kAborted);
      break;
    case ParkKind::kIo: {
      // relaxed: written before the arm, which the fetch_or above follows.
      WorkerRemote* owner = io_owner.load(std::memory_order_relaxed);
      ref();  // released by the owner after it handles the message
      owner->send({MailMessage::Kind::kCancelIo, this, park_epoch(w)});
      break;
    }
    case ParkKind::kNone:
    case ParkKind::kUninterruptible:
      break;
  }
}

void Fiber::on_abort() noexcept { deliver_abort(); }

bool wake_fiber(Fiber* f, std::uint64_t epoch, WakeReason reason) noexcept {
  if (!claim_park(*f, epoch, reason)) return false;
  f->wake_reason = reason;
  if (reason != WakeReason::kTimedOut && f->timer_heap) f->timer_heap->note_stale();
  f->scheduler().put_woken(f);
  return true;
}

}  // namespace spindle::detail
