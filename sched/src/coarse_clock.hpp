// A cheap monotonic clock in milliseconds (CLOCK_MONOTONIC_COARSE: a few ns
// through the vDSO, a few ms of resolution), for ages shown in dumps.
#pragma once

#include <time.h>

#include <cstdint>

namespace spindle::detail {

inline std::uint64_t coarse_now_ms() noexcept {
  struct timespec ts;
  ::clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1000 +
         static_cast<std::uint64_t>(ts.tv_nsec) / 1'000'000;
}

}  // namespace spindle::detail
