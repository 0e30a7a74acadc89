// IoRequest: a fiber's I/O operation while the fiber is parked on it, and
// the two ends of that park: park_on_io() on the fiber, complete_io() on the
// worker whose backend holds the operation.
#pragma once

#include <cerrno>
#include <cstdint>

#include "core/current.hpp"
#include "core/park_word.hpp"
#include "core/scheduler.hpp"
#include "core/worker.hpp"
#include "io/driver.hpp"
#include "spindle/base/time.hpp"
#include "spindle/sched/detail/fiber.hpp"
#include "spindle/sched/io.hpp"
#include "time/timeout_wheel.hpp"

namespace spindle::detail {

struct IoRequest;

// The wheel entry of an IoRequest, with the way back to it.
struct IoDeadline : WheelEntry {
  IoRequest* request = nullptr;
};

// Lives on the parked fiber's stack, as the base of a backend's own record.
// Worker-affine: from its start to its completion it belongs to the worker
// whose backend holds it (`driver`).
struct IoRequest {
  // Takes the fiber's next park epoch.
  IoRequest(IoDriver& d, Fiber* f, const IoOp& o, const IoOptions& options) noexcept
      : driver(d),
        fiber(f),
        op(&o),
        epoch(++f->epoch),
        deadline(wait_deadline(options)),
        cancellable(options.cancellable) {
    deadline_entry.request = this;
  }
  IoRequest(const IoRequest&) = delete;
  IoRequest& operator=(const IoRequest&) = delete;

  IoDriver& driver;
  Fiber* const fiber;
  const IoOp* const op;
  const std::uint64_t epoch;  // of the fiber's park on it
  const Deadline deadline;
  IoDeadline deadline_entry;
  int result = 0;  // >= 0, or -errno
  const bool cancellable;
  bool timed_out = false;  // the deadline expired and cancelled it
  bool aborted = false;    // an abort cancelled it
};

// What every backend's publish does after handing `r` over: arms its
// deadline, and cancels it if the fiber was aborted meanwhile.
inline void published(IoRequest& r) noexcept {
  if (r.deadline != kNoDeadline) current_worker()->wheel().insert(&r.deadline_entry, r.deadline);
  // The mirror of Fiber::on_abort: the abort flag is read after the arm.
  if (r.cancellable && r.fiber->aborted()) [[unlikely]] {
    r.aborted = true;
    r.driver.cancel(r);
  }
}

// Parks the calling fiber `r.fiber` on `r`, which the caller has counted in
// flight on its driver (count_started), and returns when complete_io(r) has
// made it ready again, on whatever worker. `publish(&r)` runs on the worker
// once the fiber's context is saved and its park armed: it hands `r` to the
// backend (unless the backend holds it already), then calls published(r).
inline void park_on_io(IoRequest& r, void (*publish)(void* request) noexcept) noexcept {
  Fiber* f = r.fiber;
  f->io_request = &r;
  f->waiting_on = "io";
  Suspend s;
  s.kind = Suspend::Kind::kPark;
  s.park = ParkKind::kIo;
  s.publish = publish;
  s.arg = &r;
  Worker::suspend(f, s);
  f->io_request = nullptr;
}

// The outcome of `r` once complete_io() made its fiber ready: a cancelled
// operation says why it was cancelled; a completion that raced its cancel
// wins.
inline Result<int> io_result(const IoRequest& r) noexcept {
  const int res = r.result;
  if (res >= 0) [[likely]]
    return res;
  if ((res == -ECANCELED || res == -EINTR) && (r.aborted || r.timed_out)) {
    return failure(r.aborted ? errc::aborted : errc::timed_out);
  }
  return errno_failure(-res);
}

// The only waker of an I/O park: records the result and makes the fiber
// ready. On the worker of `r.driver`, once the operation can no longer touch
// its buffers.
inline void complete_io(IoRequest& r, int result) noexcept {
  r.driver.count_ended();
  r.result = result;
  if (r.deadline_entry.linked()) current_worker()->wheel().remove(&r.deadline_entry);
  Fiber* f = r.fiber;
  f->wake_reason = WakeReason::kNotified;
  end_io_park(*f);
  f->scheduler().put_woken(f);
}

}  // namespace spindle::detail
