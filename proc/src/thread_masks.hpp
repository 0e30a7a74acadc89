// The signal masks of every thread of this process, from /proc/self/task:
// how SignalSet checks the mask rule.
#pragma once

#include <signal.h>

#include <optional>
#include <string>

namespace spindle::signals::detail {

// A thread alive now that does not block every signal of `set`, as
// "thread TID (NAME) does not block SIGNAL"; nullopt if every thread blocks
// it, or if /proc/self/task cannot be read (then nothing can be checked).
// Thread-safe; reads procfs, which never waits for a device.
std::optional<std::string> thread_not_blocking(const sigset_t& set);

}  // namespace spindle::signals::detail
