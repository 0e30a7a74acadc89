// UringDriver: the io_uring backend. Each operation is one SQE on the
// worker's ring, whose CQE completes it.
#pragma once

#include "io/driver.hpp"
#include "spindle/uring/ring.hpp"
#include "spindle/uring/wake_source.hpp"

namespace spindle::detail {

// Worker-affine: the ring is single-issuer.
class UringDriver final : public IoDriver {
 public:
  // Throws what Ring's constructor throws.
  UringDriver(const Config& config, EventFd& wake);

  const char* name() const noexcept override { return "io_uring"; }
  void service(std::size_t max) noexcept override { ring_.service(max); }
  void wait(std::optional<std::chrono::nanoseconds> timeout, std::size_t completions,
            std::size_t max) noexcept override;
  bool supports(IoCode code) const noexcept override;
  Result<int> perform(Fiber* f, const IoOp& op, const IoOptions& options) noexcept override;
  void cancel(IoRequest& r) noexcept override;
  // Nothing of this backend goes to the blocking pool by message.
  void offload_done(Fiber* fiber) noexcept override;

 private:
  // `op` as one SQE: parks the fiber until its CQE.
  Result<int> issue(Fiber* f, const IoOp& op, const IoOptions& options) noexcept;
  static void publish(void* request) noexcept;

  EventFd& wake_;
  uring::WakeSource wake_poll_;  // before ring_, which must be destroyed first
  uring::Ring ring_;
};

std::unique_ptr<IoBackend> make_uring_backend(Scheduler& scheduler, WorkerRemote& self,
                                              EventFd& wake);

}  // namespace spindle::detail
