#include "io/driver.hpp"

#include "core/current.hpp"
#include "core/park_word.hpp"
#include "core/worker.hpp"
#include "io/request.hpp"
#include "spindle/base/assert.hpp"

namespace spindle::detail {

void IoDriver::expire(WheelEntry* entry) noexcept {
  IoRequest& r = *static_cast<IoDeadline*>(entry)->request;
  if (r.aborted) return;
  r.timed_out = true;
  cancel(r);
}

void IoDriver::cancel_parked(Fiber* fiber, std::uint64_t epoch) noexcept {
  if (!confirm_io_abort(*fiber, epoch)) return;  // that park ended
  IoRequest& r = *fiber->io_request;
  if (&r.driver != this || !r.cancellable || r.aborted || r.timed_out) return;
  r.aborted = true;
  cancel(r);
}

}  // namespace spindle::detail
