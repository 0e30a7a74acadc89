// Parker: how a worker thread sleeps when it has nothing to run, and how any
// thread wakes it. One packed atomic word, so waking a worker that is awake
// costs no system call.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>

#include "park/event_fd.hpp"

namespace spindle::detail {

// unpark() is thread-safe; everything else is called only by the owning
// worker.
//
// Protocol: the worker clear()s the latch, then looks for work, then blocks
// only if no unpark() happened since the clear (the arm CAS fails when the
// latch is set). A waker publishes its work, then unpark()s: it sets the latch
// and, only if the worker armed one, makes the syscall that ends its block.
// Whatever order they run in, either the worker's look finds the work, or the
// arm sees the latch, or the waker sees the armed bit and wakes it.
class Parker {
 public:
  explicit Parker(EventFd* eventfd) noexcept : eventfd_(eventfd) {}

  // Any thread: ends the worker's current or next block.
  void unpark() noexcept;

  // Owner: forget earlier unparks; call before the last look for work.
  // An exchange, not a store: reading the latch synchronizes with the
  // unpark() that set it, so the look for work that follows sees what that
  // waker published.
  void clear() noexcept { state_.exchange(0, std::memory_order_seq_cst); }
  bool signalled() const noexcept { return state_.load(std::memory_order_acquire) & kSignalled; }

  // Owner: block on the futex until unpark() or `timeout`. Returns at once if
  // unpark() happened since clear(). Returns how long it really slept (zero if
  // it did not block).
  std::chrono::nanoseconds park(std::optional<std::chrono::nanoseconds> timeout) noexcept;

  // Owner: announce a block inside the I/O backend (io_uring_enter,
  // epoll_wait), which unpark() ends through the eventfd. Returns false (do not block) if unpark()
  // happened since clear(). After the block, call disarm().
  bool arm_eventfd() noexcept;
  void disarm() noexcept { state_.store(0, std::memory_order_seq_cst); }

 private:
  static constexpr std::uint32_t kWaitingFutex = 1;
  static constexpr std::uint32_t kWaitingEventfd = 2;
  static constexpr std::uint32_t kSignalled = 4;

  std::atomic<std::uint32_t> state_{0};
  EventFd* eventfd_;
};

}  // namespace spindle::detail
