// process::output: run a program to its end and collect what it printed.
#pragma once

#include <string>
#include <vector>

#include "spindle/base/result.hpp"
#include "spindle/base/timeout.hpp"
#include "spindle/proc/exit_status.hpp"
#include "spindle/proc/spawn.hpp"

namespace spindle::process {

struct Output {
  ExitStatus status;
  std::string out;  // everything it wrote to stdout
  std::string err;  // everything it wrote to stderr
};

// spawn(argv, options) with stdout and stderr piped whatever `options` says
// (a piped stdin is closed at once: the program reads end of file), reads
// both to their end at the same time (stderr on a fiber of its own, so a
// program that fills one pipe while the other is read cannot stall), then
// waits for it. One `timeout` covers the whole call (Timeout(): none). On
// any failure (spawn's errors, errc::timed_out, errc::aborted) the process
// is killed and reaped, and what it printed is lost. A status other than
// success is not an error: look at Output::status. Fiber-only.
// Suspends: until the program has ended, the timeout or an abort.
Result<Output> output(const std::vector<std::string>& argv, Options options = {},
                      Timeout timeout = {});

}  // namespace spindle::process
