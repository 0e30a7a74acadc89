// runtime_log: a message from code on spindle (its own libraries included),
// through the running runtime's Config::on_log.
#pragma once

#include <string_view>

#include "spindle/base/log.hpp"

namespace spindle {

// Sends `message` at `level` to the Config::on_log of the runtime whose
// worker runs the calling thread (any fiber's), or to stderr anywhere else
// (a plain or blocking-pool thread). Never suspends; thread-safe as the
// sink is.
void runtime_log(LogLevel level, std::string_view message) noexcept;

}  // namespace spindle
