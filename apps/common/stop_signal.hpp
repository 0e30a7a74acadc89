// StopSignal: SIGINT and SIGTERM as something a fiber can wait for, and
// SIGUSR1 as a request for a fiber dump on stderr.
#pragma once

#include "spindle/base/result.hpp"

namespace spindle::apps {

// Construct it first in main(), before the Runtime starts any thread: it
// blocks SIGINT, SIGTERM and SIGUSR1 in the calling thread, every thread
// started afterwards inherits that mask, and the signals then wait in a
// signalfd instead of killing the process. Not thread-safe; wait() from one
// fiber.
class StopSignal {
 public:
  StopSignal();  // throws std::system_error if signalfd fails
  StopSignal(const StopSignal&) = delete;
  StopSignal& operator=(const StopSignal&) = delete;
  ~StopSignal();

  // The next SIGINT or SIGTERM (its number), or errc::aborted. Each SIGUSR1
  // meanwhile prints RuntimeHandle::dump() on stderr.
  // Suspends: until a signal arrives (a POLL_ADD on the ring) or an abort.
  Result<int> wait();

 private:
  int fd_ = -1;
};

}  // namespace spindle::apps
