#include "spindle/sched/log.hpp"

#include "core/current.hpp"
#include "core/scheduler.hpp"
#include "core/worker.hpp"

namespace spindle {

void runtime_log(LogLevel level, std::string_view message) noexcept {
  static const LogSink kStderr;
  const detail::Worker* w = detail::current_worker();
  write_log(w ? w->scheduler().config.on_log : kStderr, level, message);
}

}  // namespace spindle
