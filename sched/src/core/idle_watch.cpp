#include "core/idle_watch.hpp"

#include <algorithm>
#include <utility>

#include "core/scheduler.hpp"
#include "core/worker_remote.hpp"

namespace spindle::detail {

std::optional<std::chrono::nanoseconds> IdleWatch::begin(Scheduler& scheduler,
                                                         std::size_t self) noexcept {
  if (scheduler.workers.size() == 1) return std::nullopt;
  IdleSet& idle = scheduler.idle;
  if (!idle.try_watch()) return std::nullopt;
  if (!idle.others_awake(self)) {
    idle.end_watch();
    // A worker that woke before the give-back saw the watch held: look again.
    if (!idle.others_awake(self) || !idle.try_watch()) return std::nullopt;
  }
  watching_ = true;
  if (start_ == Deadline{}) {
    for (WorkerRemote* w : scheduler.workers) {
      // relaxed: a turn count is a hint; a stale one delays a steal by a watch.
      turns_[w->index()] = w->stall_probe().turns.load(std::memory_order_relaxed);
    }
    start_ = Clock::now();
  }
  return std::max<std::chrono::nanoseconds>(start_ + interval_ - Clock::now(),
                                            std::chrono::nanoseconds::zero());
}

void IdleWatch::end(Scheduler& scheduler) noexcept {
  if (!std::exchange(watching_, false)) return;
  scheduler.idle.end_watch();
  due_ = Clock::now() - start_ >= interval_;
}

bool IdleWatch::take_due() noexcept { return std::exchange(due_, false); }

bool IdleWatch::stuck(const WorkerRemote& victim) const noexcept {
  // relaxed: see begin(). Odd: inside a fiber's turn.
  const std::uint64_t turns = victim.stall_probe().turns.load(std::memory_order_relaxed);
  return (turns & 1) != 0 && turns == turns_[victim.index()];
}

void IdleWatch::rearm(bool found_queued) noexcept {
  start_ = {};
  interval_ = found_queued ? std::chrono::nanoseconds(kWatchMin)
                           : std::min<std::chrono::nanoseconds>(2 * interval_, kWatchMax);
}

}  // namespace spindle::detail
