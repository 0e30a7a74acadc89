// The futex system call on a 32-bit atomic, private to the process: how a
// parked worker and a plain thread waiting on a primitive sleep.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <ctime>

#include "spindle/base/time.hpp"

namespace spindle::detail {

// futex(2) with FUTEX_PRIVATE_FLAG added to `op`. Thread-safe.
inline long futex(std::atomic<std::uint32_t>* word, int op, std::uint32_t value,
                  const struct timespec* timeout) noexcept {
  return ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), op | FUTEX_PRIVATE_FLAG,
                   value, timeout, nullptr, 0);
}

// A plain thread's wait for a claim word that a waker moves from 0 with a
// CAS: returns the word once it is nonzero, or at `deadline` claims it with
// `timed_out` itself (or returns the waker's value if one won meanwhile).
// The load and the CAS acquire, pairing with the waker's CAS.
inline std::uint32_t wait_for_claim(std::atomic<std::uint32_t>& word, Deadline deadline,
                                    std::uint32_t timed_out) noexcept {
  for (;;) {
    const std::uint32_t claimed = word.load(std::memory_order_acquire);
    if (claimed != 0) return claimed;
    timespec ts{};
    const timespec* tsp = nullptr;
    if (deadline != kNoDeadline) {
      const auto left = deadline - Clock::now();
      if (left <= Clock::duration::zero()) {
        std::uint32_t open = 0;
        if (word.compare_exchange_strong(open, timed_out, std::memory_order_acq_rel)) {
          return timed_out;
        }
        return open;
      }
      const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(left).count();
      ts.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
      ts.tv_nsec = static_cast<long>(ns % 1'000'000'000);
      tsp = &ts;
    }
    futex(&word, FUTEX_WAIT, 0, tsp);
  }
}

}  // namespace spindle::detail
