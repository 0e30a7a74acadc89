// EpollDriver: the I/O backend where io_uring is refused. A socket, pipe or
// other pollable fd is tried at once without blocking; on EAGAIN the fiber
// parks until the worker's epoll reports the fd ready, then tries again.
// Regular-file operations run on the blocking pool. Deadlines, aborts and
// cross-thread wakes end the same epoll_wait.
#pragma once

#include <sys/epoll.h>

#include <cstdint>
#include <vector>

#include "core/blocking_pool.hpp"
#include "io/buffer_pool.hpp"
#include "io/request.hpp"
#include "spindle/base/intrusive_list.hpp"
#include "spindle/base/unique_fd.hpp"

namespace spindle::detail {

class WorkerRemote;

// An operation of the epoll backend while its fiber is parked on it: a wait
// for its fd's readiness, or a call on the blocking pool.
struct EpollRequest final : IoRequest, PoolJob {
  enum class Mode : std::uint8_t {
    kWatch,  // a wait for the fd's readiness
    kPool,   // the blocking call on the pool
    kNext,   // done at the next service (a nop)
  };

  EpollRequest(IoDriver& d, Fiber* f, const IoOp& o, const IoOptions& options, Mode m,
               std::uint32_t events, WorkerRemote* home) noexcept
      : IoRequest(d, f, o, options),
        mode(m),
        poll(o.code == IoCode::kPoll),
        interest(events),
        owner(home) {}

  // On a pool thread: the blocking system call, then the result home.
  void run() noexcept override;

  ListLinks<EpollRequest> links;  // in its fd's waiters, or the finished list
  const Mode mode;
  // A kPoll, whose result is the events: dispatch() reads this, not the op,
  // which lies on another line of the parked fiber's stack.
  const bool poll;
  const std::uint32_t interest;  // kWatch: EPOLLIN, EPOLLOUT, ...
  WorkerRemote* const owner;     // the worker the pool hands the result back to
  int pool_result = 0;           // written by the pool thread before it hands back
  bool finishing = false;        // in the finished list: its result is set
};

// Worker-affine, like every driver; the pool's threads reach it only
// through the worker's mailbox.
class EpollDriver final : public IoDriver {
 public:
  // Throws std::system_error if epoll_create1 or epoll_ctl fails.
  EpollDriver(const Config& config, EventFd& wake, BlockingPool& pool, WorkerRemote& self);

  const char* name() const noexcept override { return "epoll"; }
  void service(std::size_t max) noexcept override;
  void wait(std::optional<std::chrono::nanoseconds> timeout, std::size_t completions,
            std::size_t max) noexcept override;
  void offload_done(Fiber* fiber) noexcept override;
  // Readiness needs an epoll_wait to be seen.
  bool work_visible() const noexcept override { return !finished_.empty(); }
  bool sees_completions() const noexcept override { return false; }
  bool supports(IoCode code) const noexcept override { return code != IoCode::kSqe; }
  Result<int> perform(Fiber* f, const IoOp& op, const IoOptions& options) noexcept override;
  void cancel(IoRequest& r) noexcept override;

 private:
  using Waiters = IntrusiveList<EpollRequest, &EpollRequest::links>;
  // One fd of this worker's epoll set.
  struct Watched {
    Waiters waiters;
    // Nonzero: the fd is in the set edge-triggered for `registered` events,
    // kept between waits, for the operations of IoOptions::fd_id `id`; then
    // `ready` holds the events reported since a try here last found the fd
    // not ready for them (EAGAIN, or a short receive from a TCP socket).
    // 0: armed one-shot per wait.
    std::uint64_t id = 0;
    std::uint32_t registered = 0;
    std::uint32_t ready = 0;
    bool in_set = false;  // added and not known to be gone (a close removes it silently)
    bool tcp = false;     // id != 0: a TCP socket
    std::uint64_t nonblocking_id = 0;  // the fd_id whose fd was made O_NONBLOCK here

    // The events the waiters wait for.
    std::uint32_t wanted() const noexcept;
  };

  static void publish(void* request) noexcept;
  // Parks the fiber on `op` in `mode` (a kWatch for `events`); the result of
  // the wait or call.
  Result<int> park(Fiber* f, const IoOp& op, const IoOptions& options, EpollRequest::Mode mode,
                   std::uint32_t events = 0);
  // A result that came without a wait; every kImmediateBudget-th in a row
  // yields first.
  Result<int> done_at_once(int res) noexcept;
  // A splice: at once between pipes and sockets, waiting for the end not
  // ready; on the pool when another kind of fd is involved.
  Result<int> perform_splice(Fiber* f, const IoOp& op, const IoOptions& options) noexcept;
  // The entry of `fd`, made if new.
  Watched& slot(int fd);
  // The entry of `op`'s fd if it is registered here for `op.fd_id` and
  // `events`, else null.
  Watched* registration(const IoOp& op, std::uint32_t events) noexcept;
  // One try of `op` that does not block, noting in `w` (if any) what it
  // learnt of the fd's readiness for `events`: the result, or -errno.
  int attempt(const IoOp& op, Watched* w, std::uint32_t events) noexcept;
  // A try of a kRecvPooled: into a buffer of the pool, lent to the caller
  // if bytes came; -ENOBUFS when every buffer is out.
  int receive_pooled(const IoOp& op) noexcept;
  // Adds `r` to its fd's waiters and arms or registers the fd for them.
  void watch(EpollRequest& r) noexcept;
  // epoll_ctl(op) of `fd` for `events`, falling back to ADD when the fd is
  // no longer in the set (closed, its number reused) and to MOD when it
  // already is: 0 or the errno.
  int control(int op, int fd, std::uint32_t events) noexcept;
  // One-shot arming for every waiter's events.
  int arm(int fd, Watched& w) noexcept;
  // Keeps `fd` in the set edge-triggered for fd id `id`, for at least the
  // waiters' events.
  int keep(int fd, Watched& w, std::uint64_t id) noexcept;
  // Completes `r` with `result` at the next service: never inside a publish.
  void finish_later(EpollRequest& r, int result) noexcept;
  void dispatch(const epoll_event* events, int n) noexcept;
  void complete_finished() noexcept;

  EventFd& wake_;
  BlockingPool& pool_;
  WorkerRemote& self_;
  UniqueFd epoll_;
  BufferPool::Handle receive_pool_;
  std::vector<Watched> fds_;
  Waiters finished_;
  // Immediate completions in a row: every kImmediateBudget-th yields, so a
  // fiber whose fd is always ready lets the others run.
  std::uint32_t immediate_ = 0;
};

std::unique_ptr<IoBackend> make_epoll_backend(Scheduler& scheduler, WorkerRemote& self,
                                              EventFd& wake);

}  // namespace spindle::detail
