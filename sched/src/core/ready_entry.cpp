#include "core/ready_entry.hpp"

#include "core/current.hpp"
#include "core/worker.hpp"

namespace spindle::detail {

Fiber* claim_spawned(Fiber* f) noexcept {
  bool won;
  if (f->handle_released()) {
    // No joiner can claim it any more, and one that did is seen: the entry
    // is alone with the flag.
    won = f->claimable.load(std::memory_order_relaxed);
    f->claimable.store(false, std::memory_order_relaxed);
  } else {
    // acq_rel; pairs with the exchange in Fiber::expedite: the winner runs the fiber.
    won = f->claimable.exchange(false, std::memory_order_acq_rel);
  }
  if (won) return f;
  f->unref();
  return nullptr;
}

void Fiber::expedite() noexcept {
  // relaxed: a hint; the exchange below decides.
  if (!claimable.load(std::memory_order_relaxed)) return;
  Worker* w = current_pool_worker(*scheduler_);
  if (!w || !w->current()) return;
  ref();  // the spawn entry's, dropped by whoever takes it (claim_entry)
  // acq_rel; pairs with the exchange in claim_entry: the winner runs the fiber.
  if (!claimable.exchange(false, std::memory_order_acq_rel)) {
    unref();
    return;
  }
  w->put_next(this);
}

}  // namespace spindle::detail
