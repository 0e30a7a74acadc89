// SimDriver: the I/O backend of a simulation (spindle::sim). It has no
// kernel under it and, so far, nothing simulated: every operation is refused
// with errc::unsupported, after the refusals every backend makes (abort,
// deadline, limit). Nothing is ever in flight, so the worker never waits
// in it.
#pragma once

#include <memory>

#include "io/driver.hpp"

namespace spindle::detail {

// Worker-affine, like every driver.
class SimDriver final : public IoDriver {
 public:
  explicit SimDriver(const Config& config) noexcept : IoDriver(false, config.max_io_in_flight) {}

  const char* name() const noexcept override { return "sim"; }
  void service(std::size_t) noexcept override {}
  void wait(std::optional<std::chrono::nanoseconds>, std::size_t, std::size_t) noexcept override {}
  void offload_done(Fiber*) noexcept override {}
  bool work_visible() const noexcept override { return false; }
  bool sees_completions() const noexcept override { return false; }
  bool supports(IoCode) const noexcept override { return false; }
  Result<int> perform(Fiber* f, const IoOp& op, const IoOptions& options) noexcept override;
  void cancel(IoRequest&) noexcept override {}
};

std::unique_ptr<IoBackend> make_sim_backend(Scheduler& scheduler, WorkerRemote& self,
                                            EventFd& wake);

}  // namespace spindle::detail
