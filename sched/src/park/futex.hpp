// The futex system call on a 32-bit atomic, private to the process: how a
// parked worker and a plain thread waiting on a primitive sleep.
#pragma once

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <ctime>

namespace spindle::detail {

// futex(2) with FUTEX_PRIVATE_FLAG added to `op`. Thread-safe.
inline long futex(std::atomic<std::uint32_t>* word, int op, std::uint32_t value,
                  const struct timespec* timeout) noexcept {
  return ::syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), op | FUTEX_PRIVATE_FLAG,
                   value, timeout, nullptr, 0);
}

}  // namespace spindle::detail
