// choose_io_backend: which I/O backend a runtime's workers get.
#pragma once

#include "core/io_backend.hpp"
#include "spindle/sched/config.hpp"

namespace spindle::detail {

struct IoChoice {
  IoBackendFactory factory;
  const char* name;  // "io_uring" or "epoll"
};

// Config::io_backend, or SPINDLE_IO_BACKEND when set. For auto, probes
// io_uring and, if it cannot be used, logs why (config.on_log) and chooses
// epoll. Throws std::invalid_argument for a SPINDLE_IO_BACKEND it does not
// know, and for io_uring what the probe throws (std::runtime_error saying
// what is missing). Thread-safe.
IoChoice choose_io_backend(const Config& config);

}  // namespace spindle::detail
