// WakeSource: an eventfd watched by a multishot poll in a ring, so another
// thread can end the ring owner's blocking wait.
// Nothing here blocks or suspends (the eventfd is non-blocking).
#pragma once

#include <cstdint>

#include "spindle/uring/operation.hpp"

namespace spindle::uring {

class Ring;

// signal() is thread-safe (one eventfd write); everything else is affine to the
// thread of the ring it is armed in.
class WakeSource : private Completion {
 public:
  WakeSource();  // throws std::system_error if eventfd() fails
  ~WakeSource();
  WakeSource(const WakeSource&) = delete;
  WakeSource& operator=(const WakeSource&) = delete;

  // Installs the multishot POLL_ADD in `ring` unless one is still armed (the
  // kernel ends a multishot poll with a CQE lacking IORING_CQE_F_MORE; the next
  // arm() re-installs it). Call before each blocking wait. The poll's user_data
  // is this object, so once armed in a ring this WakeSource must outlive every
  // later service()/wait() of that ring: destroy the ring first (which tears the
  // poll down), then the WakeSource. Arm in at most one ring at a time.
  void arm(Ring& ring) noexcept;

  // Makes the eventfd readable; a no-op if it already is. One write syscall.
  void signal() noexcept;

  // True if a wake CQE arrived since the last call; drains the eventfd.
  bool consume() noexcept;

  bool armed() const noexcept { return armed_; }
  int fd() const noexcept { return fd_; }

 private:
  static void on_cqe(Completion* self, int res, std::uint32_t flags) noexcept;

  int fd_ = -1;
  bool armed_ = false;
  bool fired_ = false;
};

}  // namespace spindle::uring
