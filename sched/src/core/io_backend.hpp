// IoBackend: the worker's side of the I/O seam. A worker hands its backend
// the time to work (service), its sleep when operations are pending (wait),
// the deadlines its timing wheel expires and the cancels its mailbox
// receives; what an operation is, and how a fiber parks on one, is the io/
// layer's (io/driver.hpp), which implements this interface once per kind of
// backend (io_uring, epoll).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

namespace spindle::detail {

class EventFd;
class Fiber;
class Scheduler;
class WorkerRemote;
struct WheelEntry;

// Worker-affine: made on its worker's thread, used only there.
class IoBackend {
 public:
  virtual ~IoBackend() = default;

  // "io_uring" or "epoll".
  virtual const char* name() const noexcept = 0;
  // Operations started and not yet completed. While any are, the worker
  // sleeps in wait(), where their completions end its sleep. Not virtual:
  // the worker reads it every turn.
  std::size_t pending() const noexcept { return pending_; }
  // The io/ layer's count of them: a fiber parks on an operation, the
  // operation completes.
  void count_started() noexcept { ++pending_; }
  void count_ended() noexcept { --pending_; }
  // Starts what was issued since the last call and completes at most `max`
  // operations (each makes its fiber ready); never blocks.
  virtual void service(std::size_t max) noexcept = 0;
  // Like service(), after blocking until at least `completions` operations
  // can complete (a hint), the worker's EventFd is signalled, or `timeout`
  // passes (none: no limit).
  virtual void wait(std::optional<std::chrono::nanoseconds> timeout, std::size_t completions,
                    std::size_t max) noexcept = 0;
  // Whether service() would find work at once, as far as the backend can
  // tell without a system call. For a backend that sees_completions(), that
  // includes completions of its operations; for one that does not, only
  // results it already holds.
  virtual bool work_visible() const noexcept = 0;
  // Whether work_visible() sees the kernel's completions: then an idle
  // worker with operations pending checks it for a while (its Spinner)
  // before it sleeps in wait().
  virtual bool sees_completions() const noexcept = 0;
  // The deadline of an operation on this backend expired (the entry it put
  // in the worker's timing wheel).
  virtual void expire(WheelEntry* entry) noexcept = 0;
  // The worker got a CancelIo message: cancels the operation of `fiber`'s
  // kIo park `epoch` if the fiber is still parked on it here.
  virtual void cancel_parked(Fiber* fiber, std::uint64_t epoch) noexcept = 0;
  // The worker got an IoDone message: the blocking pool finished the
  // operation `fiber` is parked on here, which this backend handed it.
  virtual void offload_done(Fiber* fiber) noexcept = 0;

 private:
  std::size_t pending_ = 0;
};

// Makes the backend of worker `self` of `scheduler`, on the worker's thread;
// `wake` is the worker's EventFd, which the backend's wait() must watch.
// Throws what the backend's set-up throws.
using IoBackendFactory = std::unique_ptr<IoBackend> (*)(Scheduler& scheduler, WorkerRemote& self,
                                                        EventFd& wake);

}  // namespace spindle::detail
