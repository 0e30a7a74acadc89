// WakeSource: a multishot poll of an eventfd in a ring, so another thread
// can end the ring owner's blocking wait by writing the eventfd.
// Nothing here blocks or suspends (the eventfd must be non-blocking).
#pragma once

#include <cstdint>

#include "spindle/uring/operation.hpp"

namespace spindle::uring {

class Ring;

// Affine to the thread of the ring it is armed in. Other threads only write
// the eventfd.
class WakeSource : private Completion {
 public:
  // Watches `eventfd` (EFD_NONBLOCK), which it does not own; the fd must
  // stay open while a poll of it may be armed.
  explicit WakeSource(int eventfd) noexcept;
  WakeSource(const WakeSource&) = delete;
  WakeSource& operator=(const WakeSource&) = delete;

  // Installs the multishot POLL_ADD in `ring` unless one is still armed (the
  // kernel ends a multishot poll with a CQE lacking IORING_CQE_F_MORE; the next
  // arm() re-installs it). Call before each blocking wait. The poll's user_data
  // is this object, so once armed in a ring this WakeSource must outlive every
  // later service()/wait() of that ring: destroy the ring first (which tears the
  // poll down), then the WakeSource. Arm in at most one ring at a time.
  void arm(Ring& ring) noexcept;

  // True if a wake CQE arrived since the last call. The caller then drains
  // the eventfd, so that the next write is a fresh edge for the poll.
  bool consume() noexcept;

  bool armed() const noexcept { return armed_; }
  int fd() const noexcept { return fd_; }

 private:
  static void on_cqe(Completion* self, int res, std::uint32_t flags) noexcept;

  const int fd_;
  bool armed_ = false;
  bool fired_ = false;
};

}  // namespace spindle::uring
