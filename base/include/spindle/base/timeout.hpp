// Timeout: the per-call limit of a blocking call that takes one. By default a
// call takes the limit its header names (net/: the runtime's Config,
// connect_timeout for connect and read_write_timeout for reads and writes,
// accept waiting forever; spindle::process and spindle::signals: none); a
// call may pass its own: a duration, an absolute deadline, or never.
// A plain value, thread-safe to read; nothing here suspends.
#pragma once

#include <chrono>

#include "spindle/base/time.hpp"

namespace spindle {

// Plain value. One Timeout covers the whole call it is passed to (every
// refill of a read_exact, every partial send of a write_all).
class Timeout {
 public:
  // A limit as a call's operations carry it: an absolute deadline, and a
  // duration that starts when the call first waits. A call that never waits
  // never reads the clock.
  struct Limit {
    Deadline deadline = kNoDeadline;
    // std::chrono::nanoseconds::max(): none.
    std::chrono::nanoseconds timeout = std::chrono::nanoseconds::max();
  };

  // The call's default.
  constexpr Timeout() noexcept = default;

  // `d` from the start of the call, or, for a call that reads the clock only
  // when it waits (net's reads and writes), from its first wait: the
  // same limit, later by the time the call spent before, which did not
  // block. d <= 0 has already expired (the call fails with errc::timed_out
  // unless it can finish without waiting). Durations clamp to 30 years.
  template <class Rep, class Period>
  constexpr Timeout(std::chrono::duration<Rep, Period> d) noexcept  // NOLINT: implicit on purpose
      : kind_(Kind::kRelative), relative_(clamp(d)) {}

  static constexpr Timeout at(Deadline deadline) noexcept {
    Timeout t;
    t.kind_ = Kind::kAbsolute;
    t.absolute_ = deadline;
    return t;
  }
  static constexpr Timeout never() noexcept { return at(kNoDeadline); }

  bool is_default() const noexcept { return kind_ == Kind::kDefault; }

  // The absolute deadline of a call starting now whose default is `fallback`
  // (kNoDeadline-style "forever" is std::chrono::nanoseconds::max()).
  Deadline deadline(std::chrono::nanoseconds fallback) const noexcept {
    switch (kind_) {
      case Kind::kDefault:
        return fallback == std::chrono::nanoseconds::max() ? kNoDeadline : Clock::now() + fallback;
      case Kind::kRelative:
        return Clock::now() + relative_;
      case Kind::kAbsolute:
        break;
    }
    return absolute_;
  }
  // The same for a call whose default is no limit.
  Deadline deadline() const noexcept { return deadline(std::chrono::nanoseconds::max()); }

  // The limit of a call whose default is `fallback`, its duration left to
  // start when the call first waits (later than deadline() would start it by
  // the time the call spent before its first wait, which did not block).
  constexpr Limit limit(std::chrono::nanoseconds fallback) const noexcept {
    switch (kind_) {
      case Kind::kDefault:
        return {.timeout = fallback};
      case Kind::kRelative:
        return {.timeout = relative_};
      case Kind::kAbsolute:
        break;
    }
    return {.deadline = absolute_};
  }

 private:
  enum class Kind : unsigned char { kDefault, kRelative, kAbsolute };

  template <class Rep, class Period>
  static constexpr std::chrono::nanoseconds clamp(std::chrono::duration<Rep, Period> d) noexcept {
    constexpr auto kMax = std::chrono::hours(24 * 365 * 30);
    if (d > kMax) return kMax;
    if (d < -kMax) return -kMax;
    return std::chrono::duration_cast<std::chrono::nanoseconds>(d);
  }

  Kind kind_ = Kind::kDefault;
  std::chrono::nanoseconds relative_{0};
  Deadline absolute_{};
};

}  // namespace spindle
