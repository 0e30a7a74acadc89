// ChannelEnd: one move-only end of a channel whose ends share its state (the
// sender of oneshot, broadcast and watch, the receiver of oneshot), and
// close_channel, what dropping a sender does.
#pragma once

#include <memory>
#include <utility>

#include "spindle/base/lock_guard.hpp"
#include "spindle/sched/detail/handoff.hpp"

namespace spindle::detail {

// Owns a share of a channel's State and runs OnDrop{}(state) when it lets go
// of it: destroyed, assigned over, or reset(). release() lets go without
// OnDrop. Not thread-safe (a value like std::unique_ptr); what OnDrop does to
// the State locks it. Null once moved from or let go.
template <class State, class OnDrop>
class ChannelEnd {
 public:
  explicit ChannelEnd(std::shared_ptr<State> state) noexcept : state_(std::move(state)) {}
  ChannelEnd(ChannelEnd&&) noexcept = default;
  ChannelEnd& operator=(ChannelEnd&& other) noexcept {
    if (this != &other) {
      reset();
      state_ = std::move(other.state_);
    }
    return *this;
  }
  ~ChannelEnd() { reset(); }

  explicit operator bool() const noexcept { return state_ != nullptr; }
  State& operator*() const noexcept { return *state_; }
  State* operator->() const noexcept { return state_.get(); }
  const std::shared_ptr<State>& shared() const noexcept { return state_; }

  void reset() noexcept {
    if (state_) OnDrop{}(*state_);
    state_.reset();
  }
  std::shared_ptr<State> release() noexcept { return std::move(state_); }

 private:
  std::shared_ptr<State> state_;
};

// Ends a channel whose State has `lock`, `closed` and the WaitQueue
// `receivers` of HandOff<State::Value> slots: no value comes after this, and
// every parked receiver is woken with errc::closed. Idempotent. Any thread.
template <class State>
void close_channel(State& s) noexcept {
  LockGuard guard(s.lock);
  s.closed = true;
  close_waiters<typename State::Value>(s.receivers);
}

// The OnDrop of a sender: dropping it closes the channel.
struct CloseOnDrop {
  template <class State>
  void operator()(State& s) const noexcept {
    close_channel(s);
  }
};

}  // namespace spindle::detail
