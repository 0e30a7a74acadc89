#include "spindle/proc/exit_status.hpp"

#include "spindle/proc/signal_set.hpp"

namespace spindle::process {

std::string ExitStatus::to_string() const {
  if (exited()) return "exited with code " + std::to_string(code);
  return "killed by " + signals::name(signal) + (core_dumped ? " (core dumped)" : "");
}

}  // namespace spindle::process
