// The error_code of a failed spawn, whose message names the program.
#pragma once

#include <cstddef>
#include <string>
#include <system_error>

namespace spindle::process::detail {

inline constexpr std::size_t kNamedSpawnErrors = 256;

// errno `err` of a spawn of `what` (the program, and its working directory
// if one was set): value() is `err`, it compares equal to std::errc values
// as a system error does, and message() is "spawn WHAT: STRERROR". One
// error category per distinct `what`, kept for the life of the process (an
// error_code refers to its category), up to kNamedSpawnErrors of them; past
// that, a plain system error. Thread-safe.
std::error_code spawn_error(int err, const std::string& what);

}  // namespace spindle::process::detail
