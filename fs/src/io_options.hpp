// How fs/ runs its operations. Private to fs/.
#pragma once

#include "spindle/sched/io.hpp"

namespace spindle::fs::detail {

// Writes, syncs and mutations: never cancelled, not by an abort, a deadline
// or shutdown (a mutation that may or may not have happened is worse than
// one that finished).
inline constexpr IoOptions kNeverCancel{.cancellable = false};

}  // namespace spindle::fs::detail
