// WakeSource: an eventfd plus a multishot POLL_ADD on it, the way another thread
// ends a worker's blocking Ring::wait().
//
// Protocol: the worker calls arm() before each blocking wait (a no-op while the
// multishot poll is still installed), then wait(), then consume(). A signal()
// from any thread writes the eventfd; the poll posts a CQE; its handler sets
// fired_. consume() drains the counter so the next write is a fresh edge for the
// poll. A signal that lands between consume() and the next wait() leaves the
// eventfd readable, and the still-armed poll has already posted (or will post)
// its CQE, so the wait returns at once: no wake is lost.
//
// Lifetime: the poll's user_data is this object and it holds a reference to the
// eventfd's file, so closing fd_ alone does not remove it. The ring must be
// destroyed (tearing the poll down) before this object, or never be serviced
// again once this object is gone.

#include "spindle/uring/wake_source.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "spindle/base/assert.hpp"
#include "spindle/uring/ring.hpp"

namespace spindle::uring {

WakeSource::WakeSource() : Completion(&WakeSource::on_cqe) {
  fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd_ < 0) throw std::system_error(errno, std::system_category(), "spindle: eventfd");
}

WakeSource::~WakeSource() { ::close(fd_); }

void WakeSource::arm(Ring& ring) noexcept {
  if (armed_) return;
  io_uring_sqe* sqe = ring.internal_sqe(this);
  io_uring_prep_poll_multishot(sqe, fd_, POLLIN);
  armed_ = true;
}

// Thread-safe: one write(2) on the eventfd. EAGAIN means the counter is at its
// maximum, so the fd is readable anyway.
void WakeSource::signal() noexcept {
  const int ret = ::eventfd_write(fd_, 1);
  SPINDLE_ASSERT(ret == 0 || errno == EAGAIN, "eventfd write failed");
}

bool WakeSource::consume() noexcept {
  if (!fired_) return false;
  fired_ = false;
  eventfd_t value = 0;
  // Non-blocking: EAGAIN just means a previous consume() already drained it.
  const int ret = ::eventfd_read(fd_, &value);
  SPINDLE_ASSERT(ret == 0 || errno == EAGAIN, "eventfd read failed");
  return true;
}

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
