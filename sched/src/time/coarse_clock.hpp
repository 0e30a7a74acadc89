// A cheap monotonic clock (CLOCK_MONOTONIC_COARSE: a few ns through the
// vDSO, a few ms of resolution): milliseconds for ages shown in dumps, and a
// test that spares the precise clock when a deadline is far away. Under a
// simulation the milliseconds are its virtual time's, and the test always
// defers to Clock::now(), which reads it.
#pragma once

#include <time.h>

#include <chrono>
#include <cstdint>

#include "spindle/base/time.hpp"

namespace spindle::detail {

// True when `d` is certainly still ahead of Clock::now() (CLOCK_MONOTONIC,
// whose time the coarse clock reports as of its last tick): the coarse time
// plus four of its ticks is before `d`. False says nothing: read Clock::now().
inline bool surely_ahead(Deadline d) noexcept {
  if (detail::virtual_now) [[unlikely]]
    return false;
  static const std::chrono::nanoseconds slack = [] {
    struct timespec res{};
    ::clock_getres(CLOCK_MONOTONIC_COARSE, &res);
    return 4 * std::chrono::nanoseconds(res.tv_nsec + res.tv_sec * 1'000'000'000L);
  }();
  struct timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  const Deadline coarse{std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec)};
  return coarse + slack < d;
}

inline std::uint64_t coarse_now_ms() noexcept {
  if (const std::chrono::nanoseconds* v = detail::virtual_now) [[unlikely]]
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(*v).count());
  struct timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000 +
         static_cast<std::uint64_t>(ts.tv_nsec) / 1'000'000;
}

}  // namespace spindle::detail
