// WakeSource: a multishot POLL_ADD on an eventfd, the way another thread ends
// a worker's blocking Ring::wait().
//
// Protocol: the worker calls arm() before each blocking wait (a no-op while the
// multishot poll is still installed), then wait(), then consume(), and drains
// the eventfd if it fired. Any thread writes the eventfd; the poll posts a CQE;
// its handler sets fired_. The drain makes the next write a fresh edge for the
// poll. A write that lands between the drain and the next wait() leaves the
// eventfd readable, and the still-armed poll has already posted (or will post)
// its CQE, so the wait returns at once: no wake is lost.
//
// Lifetime: the poll's user_data is this object and it holds a reference to the
// eventfd's file, so closing the fd alone does not remove it. The ring must be
// destroyed (tearing the poll down) before this object, or never be serviced
// again once this object is gone.

#include "spindle/uring/wake_source.hpp"

#include <poll.h>

#include <utility>

#include "spindle/uring/ring.hpp"

namespace spindle::uring {

WakeSource::WakeSource(int eventfd) noexcept : Completion(&WakeSource::on_cqe), fd_(eventfd) {}

void WakeSource::arm(Ring& ring) noexcept {
  if (armed_) return;
  io_uring_sqe* sqe = ring.internal_sqe(this);
  io_uring_prep_poll_multishot(sqe, fd_, POLLIN);
  armed_ = true;
}

bool WakeSource::consume() noexcept { return std::exchange(fired_, false); }

// Runs on the ring's thread from Ring::dispatch() (or the ring's destructor).
// An error or a CQE without IORING_CQE_F_MORE ends the multishot poll; fired_ is
// still set so the owner looks again (a spurious wake is harmless, a lost one
// is not) and re-arms.
void WakeSource::on_cqe(Completion* self, int res, std::uint32_t flags) noexcept {
  auto* ws = static_cast<WakeSource*>(self);
  ws->fired_ = true;
  if (res < 0 || (flags & IORING_CQE_F_MORE) == 0) ws->armed_ = false;
}

}  // namespace spindle::uring
