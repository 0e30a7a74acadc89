#include "park/parker.hpp"

#include <cerrno>
#include <ctime>

#include "park/futex.hpp"

namespace spindle::detail {

void Parker::unpark() noexcept {
  const std::uint32_t prev = state_.fetch_or(kSignalled, std::memory_order_seq_cst);
  if (prev & kSignalled) return;  // the first waker of this epoch does the syscall
  if (prev & kWaitingFutex) {
    futex(&state_, FUTEX_WAKE, 1, nullptr);
  } else if (prev & kWaitingEventfd) {
    eventfd_->signal();
  }
}

std::chrono::nanoseconds Parker::park(std::optional<std::chrono::nanoseconds> timeout) noexcept {
  std::uint32_t expected = 0;
  if (!state_.compare_exchange_strong(expected, kWaitingFutex, std::memory_order_seq_cst)) {
    state_.store(0, std::memory_order_relaxed);
    return std::chrono::nanoseconds::zero();
  }
  const auto start = std::chrono::steady_clock::now();
  struct timespec ts;
  const struct timespec* tsp = nullptr;
  if (timeout) {
    const auto ns = std::max<std::int64_t>(timeout->count(), 0);
    ts.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
    ts.tv_nsec = static_cast<long>(ns % 1'000'000'000);
    tsp = &ts;
  }
  // Sleeps only while the word still reads "waiting, not signalled"; a wake
  // between the CAS and the syscall makes it return at once (EAGAIN).
  while (state_.load(std::memory_order_acquire) == kWaitingFutex) {
    const long r = futex(&state_, FUTEX_WAIT, kWaitingFutex, tsp);
    if (r != 0 && errno == ETIMEDOUT) break;
    if (r != 0 && errno == EINTR) continue;
    if (r == 0) continue;  // spurious or real wake: the loop condition decides
  }
  state_.store(0, std::memory_order_seq_cst);
  return std::chrono::steady_clock::now() - start;
}

bool Parker::arm_eventfd() noexcept {
  std::uint32_t expected = 0;
  if (state_.compare_exchange_strong(expected, kWaitingEventfd, std::memory_order_seq_cst))
    return true;
  state_.store(0, std::memory_order_relaxed);
  return false;
}

}  // namespace spindle::detail
