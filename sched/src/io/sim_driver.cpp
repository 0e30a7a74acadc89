#include "io/sim_driver.hpp"

namespace spindle::detail {

Result<int> SimDriver::perform(Fiber* f, const IoOp&, const IoOptions& options) noexcept {
  if (auto refused = refusal(*this, f, options)) return failure(*refused);
  return failure(errc::unsupported);
}

std::unique_ptr<IoBackend> make_sim_backend(Scheduler& scheduler, WorkerRemote&, EventFd&) {
  return std::make_unique<SimDriver>(scheduler.config);
}

}  // namespace spindle::detail
