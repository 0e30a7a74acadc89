// StopSignal: SIGINT and SIGTERM as something a fiber can wait for, and
// SIGUSR1 as a request for a fiber dump on stderr, on a
// spindle::signals::SignalSet.
#pragma once

#include "spindle/base/result.hpp"
#include "spindle/proc/signal_set.hpp"

namespace spindle::apps {

// Construct it first in main(), before the Runtime starts any thread, as
// SignalSet's mask rule asks. Not thread-safe; wait() from one fiber.
class StopSignal {
 public:
  // Throws what SignalSet's constructor throws.
  StopSignal();

  // The next SIGINT or SIGTERM (its number), or errc::aborted. Each SIGUSR1
  // meanwhile prints RuntimeHandle::dump() on stderr.
  // Suspends: until a signal arrives or an abort.
  Result<int> wait();

 private:
  signals::SignalSet set_;
};

}  // namespace spindle::apps
