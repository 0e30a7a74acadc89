// Waking a parked worker once the caller holds no SpinLock (spinlock.hpp says why).
#pragma once

namespace spindle::detail {

class WorkerRemote;

// Unparks `w` now, or, if this thread holds a SpinLock, when it releases the
// last one. The caller's push is already published, so the delay loses no
// wake-up: the worker stays claimed until it runs. Thread-safe.
void unpark_after_locks(WorkerRemote* w) noexcept;

}  // namespace spindle::detail
