#include "stop_signal.hpp"

#include <csignal>
#include <cstdio>
#include <string>

#include "spindle/sched/runtime.hpp"

namespace spindle::apps {

StopSignal::StopSignal() : set_{SIGINT, SIGTERM, SIGUSR1} {}

Result<int> StopSignal::wait() {
  for (;;) {
    auto signal = set_.wait();
    if (!signal) return failure(signal.error());
    if (signal->number != SIGUSR1) return signal->number;
    const std::string dump = current_runtime().dump();
    std::fputs(dump.c_str(), stderr);
    std::fflush(stderr);
  }
}

}  // namespace spindle::apps
