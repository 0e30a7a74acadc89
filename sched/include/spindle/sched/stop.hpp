// StopSignal: the runtime-wide stop request, as seen by the code that waits
// for it. Context::stop(code, timeout) (or RuntimeHandle::stop) resolves every
// signal with `code`, then waits until every signal taken before it is gone;
// Context::stopped() hands out signals. One stop per runtime: the first code
// wins, and later stop() calls only wait.
//
// This is a request, not a shutdown: stop() neither aborts fibers nor ends the
// runtime. The root decides what to do once its signal resolves (typically:
// tell its fibers to finish, drop its signals, return).
#pragma once

#include <memory>
#include <optional>
#include <utility>

#include "spindle/base/result.hpp"

namespace spindle {

namespace detail {
class Stopper;  // sched/src/core/stopper.hpp
}  // namespace detail

// A copyable view of the runtime's stop request. The object is not
// thread-safe (give each thread or fiber its own copy); the state it shares
// with its copies is.
//
// A signal taken by stopped() before stop() was called *holds* the stop:
// stop() returns only once every such signal, and every copy made of one, is
// destroyed or moved from. A signal taken after stop() is already resolved and
// holds nothing. So a fiber that must finish something before stop() returns
// keeps its signal until it has; one that only wants the code drops its signal
// after wait().
//
// Pitfall: stop() without a timeout waits for every holder, including the
// caller: a fiber (or thread) that calls stop() while it holds a signal itself
// (or holds one for a fiber that waits on it) waits forever. Drop (or move
// from) your own signals first, or pass a timeout.
class StopSignal {
 public:
  StopSignal(const StopSignal& o);
  StopSignal(StopSignal&& o) noexcept
      : stopper_(std::move(o.stopper_)), holds_(std::exchange(o.holds_, false)) {}
  StopSignal& operator=(const StopSignal& o);
  StopSignal& operator=(StopSignal&& o) noexcept;
  ~StopSignal();

  // The stop code once stop() has been called, else empty; also empty for a
  // moved-from signal. Never suspends.
  std::optional<int> value() const noexcept;

  // The stop code. Returns at once if stop() was already called. errc::aborted
  // in an aborted fiber (checked first, even if already stopped);
  // errc::closed if the runtime ended without a stop (only a plain thread can
  // still be waiting then). A plain thread blocks on a futex where a fiber
  // parks. Waiting does not release the hold: destroy the signal for that.
  // Must not be called on a moved-from signal (aborts).
  // Suspends: until stop() is called, the fiber is aborted, or the runtime ends.
  Result<int> wait() { return wait_until(kNoDeadline); }
  // wait(), or errc::timed_out at `deadline`.
  // Suspends: until stop() is called, the deadline, the fiber is aborted, or
  // the runtime ends.
  Result<int> wait_until(Deadline deadline);
  Result<int> wait_for(std::chrono::nanoseconds timeout) {
    return wait_until(deadline_after(timeout));
  }

  // Internal: signals come from Context::stopped() and RuntimeHandle::stopped().
  StopSignal(std::shared_ptr<detail::Stopper> stopper, bool holds) noexcept
      : stopper_(std::move(stopper)), holds_(holds) {}

 private:
  friend class StopCase;

  void release() noexcept;

  std::shared_ptr<detail::Stopper> stopper_;  // null once moved from
  bool holds_ = false;                        // counted in the stopper's holders
};

}  // namespace spindle
