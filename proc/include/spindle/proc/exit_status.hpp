// ExitStatus: how a child process ended. A plain value; nothing here
// suspends.
#pragma once

#include <string>

namespace spindle::process {

// Either exited (signal == 0) with `code`, or killed by `signal`. Compare
// with designated initializers: status == ExitStatus{.code = 3},
// status == ExitStatus{.signal = SIGKILL}.
struct ExitStatus {
  int code = 0;    // the exit code, 0..255, when it exited
  int signal = 0;  // the signal that killed it; 0 when it exited
  bool core_dumped = false;

  bool exited() const noexcept { return signal == 0; }
  // Exited with code 0.
  bool success() const noexcept { return signal == 0 && code == 0; }
  // "exited with code 3", "killed by SIGKILL", "killed by SIGSEGV (core dumped)".
  std::string to_string() const;

  friend bool operator==(const ExitStatus&, const ExitStatus&) = default;
};

}  // namespace spindle::process
