// process::spawn: start a program as a child process, with its standard
// streams inherited, discarded or piped, its environment and its working
// directory. Returns a Child (child.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "spindle/base/result.hpp"
#include "spindle/proc/child.hpp"

namespace spindle::process {

// What one of the child's stdin, stdout and stderr is.
enum class Stdio : std::uint8_t {
  kInherit,  // the parent's own
  kNull,     // /dev/null
  kPipe,     // a pipe whose other end is the Child's Pipe
};

// Plain aggregate; set fields with designated initializers:
//   process::spawn({"cat"}, {.std_in = Stdio::kPipe, .std_out = Stdio::kPipe})
struct Options {
  Stdio std_in = Stdio::kInherit;
  Stdio std_out = Stdio::kInherit;
  Stdio std_err = Stdio::kInherit;
  // The child's environment: the parent's (environ when spawn is called)
  // with `env` over it, or only `env` if inherit_env is false. Each entry is
  // "NAME=VALUE" and replaces the entry of the same NAME.
  bool inherit_env = true;
  std::vector<std::string> env{};
  // The child's working directory; empty: the parent's. A relative
  // program path (with a slash) is found from it.
  std::string cwd{};
  // A wait() that is aborted sends the process SIGKILL (see Child::wait).
  bool kill_on_abort = false;
};

// Starts argv[0] with arguments argv (argv[0] is also the child's argv[0]).
// A program name without a slash is looked up in the parent's PATH.
//
// How: posix_spawn(3) (a vfork-style clone and exec: nothing in the child
// allocates or takes a lock, so it is safe in this multithreaded process),
// then pidfd_open(2) of the child. The child starts with an empty signal
// mask and every signal at its default action (a SignalSet's blocked
// signals and an ignored SIGPIPE are not inherited), and with only
// descriptors 0, 1 and 2 open (everything else is closed in it, close-on-exec
// or not). The calling worker waits in posix_spawn until the child has
// exec'd (the time of a vfork and an exec: well under a millisecond for an
// ordinary program); the rest never blocks it.
//
// Errors: the errno of the step that failed (ENOENT for a program or working
// directory that does not exist, EACCES, EMFILE, ...), as an error_code
// whose message names the program (and the working directory, if set):
// "spawn nosuch: No such file or directory". Compare it with std::errc
// values (its category is not std::system_category). Throws
// std::invalid_argument naming the setting for an empty argv, a NUL in an
// argument, or an env entry without "NAME="; std::logic_error if SIGCHLD is
// ignored in this process (SIG_IGN or SA_NOCLDWAIT: children then reap
// themselves and could not be waited for). Fiber-only.
Result<Child> spawn(const std::vector<std::string>& argv, const Options& options = {});

}  // namespace spindle::process
