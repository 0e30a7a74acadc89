// net::Timeout: the per-call limit of a network call (spindle/base/timeout.hpp).
// Thread-safe to read; nothing here suspends.
#pragma once

#include "spindle/base/timeout.hpp"

namespace spindle::net {

using spindle::Timeout;

}  // namespace spindle::net
