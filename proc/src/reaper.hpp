// The reaper: a process-wide thread that waits for children nobody else will
// wait for (a Child destroyed while its process ran), so none stays a zombie.
#pragma once

#include "spindle/base/unique_fd.hpp"

namespace spindle::process::detail {

// Hands over `pidfd`, a child of this process that was sent SIGKILL: the
// reaper waits for its end and closes the pidfd. Thread-safe; never blocks
// (but where no reaper thread can be started, it waits for the child
// itself, which takes the moment a killed process needs to end).
void reap_later(UniqueFd pidfd) noexcept;

}  // namespace spindle::process::detail
