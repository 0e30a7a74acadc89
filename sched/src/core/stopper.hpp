// Stopper: the state behind Context::stop / Context::stopped, one per runtime.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <optional>

#include "spindle/base/result.hpp"
#include "spindle/base/thread_annotations.hpp"
#include "spindle/sched/detail/spinlock.hpp"
#include "spindle/sched/detail/wait.hpp"
#include "spindle/sched/stop.hpp"

namespace spindle {
class StopCase;
}  // namespace spindle

namespace spindle::detail {

// Thread-safe. Lives in a shared_ptr (Scheduler::stopper) so that signals may
// outlive the runtime without keeping the whole Scheduler alive.
//
// States: open -> stopped (stop(), once) or open -> closed (close(), at the
// end of Runtime::run without a stop). Both are final. Holders count the
// StopSignals that hold the stop back; stop() completes once it is zero.
class Stopper : public std::enable_shared_from_this<Stopper> {
 public:
  // A holding signal while open, a resolved (or closed) one that holds
  // nothing otherwise. Never suspends.
  StopSignal signal();

  // Resolves every signal with `code` (the first call's code wins), then waits
  // until no signal holds the stop. errc::aborted in an aborted fiber (checked
  // first; the stop is then not requested), errc::timed_out at `deadline`
  // (the stop stays requested), errc::closed once closed.
  // Suspends: until the holders are gone, the deadline, or abort.
  Result<void> stop(int code, Deadline deadline);

  // The end of Runtime::run: a runtime that was never stopped never will be;
  // ends waits on its signals with errc::closed. Never suspends.
  void close() noexcept;

  // Signal side. add_hold: a copy of a holding signal. release_hold: a
  // holding signal destroyed or moved from. Never suspend.
  void add_hold() noexcept;
  void release_hold() noexcept;
  std::optional<int> value() const noexcept;
  // StopSignal::wait_until's.
  Result<int> wait(Deadline deadline);

 private:
  friend class spindle::StopCase;

  enum class State : unsigned char { kOpen, kStopped, kClosed };

  SpinLock lock_;
  // Written once under lock_ (with code_ written before it); release pairs
  // with the acquire in value().
  std::atomic<State> state_{State::kOpen};
  int code_ = 0;  // valid once state_ is kStopped
  std::size_t holders_ SPINDLE_GUARDED_BY(lock_) = 0;
  WaitQueue signal_waiters_ SPINDLE_GUARDED_BY(lock_);  // in wait(), until stopped or closed
  WaitQueue stop_waiters_ SPINDLE_GUARDED_BY(lock_);    // in stop(), until holders_ is 0
};

}  // namespace spindle::detail
