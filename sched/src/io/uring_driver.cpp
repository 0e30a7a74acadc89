// The io_uring backend: the life of one operation, from the fiber to its SQE
// and back.
//
//   run()            on the fiber: a UringRequest on its stack, park_on_io()
//   publish()        on the worker, once the fiber's context is saved and its
//                    park armed: Ring::submit() has prepare_sqe() fill the SQE
//   service()/wait() one io_uring_enter hands the turn's SQEs to the kernel;
//                    a later one reaps the CQE
//   on_cqe()         the CQE (and the cancel's, if one was issued): complete_io()
//                    makes the fiber ready
//   run() returns on the fiber, on whatever worker now runs it.
//
// When nothing else is ready on the worker, run() first submits the SQE and
// services the ring itself, within the fiber's turn (complete_in_turn): an
// operation the kernel completes at once then costs one io_uring_enter and
// no switch. Otherwise the fiber parks as above, its SQE already submitted.
//
// A deadline or an abort only asks for a cancel (Ring::cancel); the request
// still ends by its own CQE, after which the kernel holds nothing of it.
//
// A pooled receive (kRecvPooled) selects its buffer from the worker's
// receive pool, handed to the kernel as a BufferRing: the CQE names the
// buffer, whose piece on_cqe lends to the caller before the fiber wakes.

#include "io/uring_driver.hpp"

#include <fcntl.h>
#include <liburing.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>
#include <new>
#include <string>
#include <system_error>

#include "core/scheduler.hpp"
#include "io/request.hpp"
#include "park/event_fd.hpp"
#include "spindle/base/assert.hpp"
#include "spindle/base/log.hpp"
#include "spindle/base/unique_fd.hpp"
#include "spindle/sched/config.hpp"
#include "spindle/sched/context.hpp"
#include "spindle/uring/probe.hpp"

namespace spindle::detail {
namespace {

// Opcodes liburing 2.3 lacks.
constexpr std::uint8_t kOpWaitid = 50;     // IORING_OP_WAITID (Linux 6.7)
constexpr std::uint8_t kOpFtruncate = 55;  // IORING_OP_FTRUNCATE (Linux 6.9)
constexpr int kErestartSys = 512;          // the kernel's ERESTARTSYS, never meant for user space
constexpr int kErestartLast = 516;         // ERESTART_RESTARTBLOCK
// The buffer group of the receive pool's buffer ring.
constexpr std::uint16_t kReceiveGroup = 0;

void prepare_sqe(const IoOp& op, io_uring_sqe* sqe) noexcept {
  switch (op.code) {
    case IoCode::kNop:
      io_uring_prep_nop(sqe);
      return;
    case IoCode::kAccept:
      io_uring_prep_accept(sqe, op.fd, op.accept.addr, op.accept.len, op.accept.flags);
      return;
    case IoCode::kConnect:
      io_uring_prep_connect(sqe, op.fd, op.connect.addr, op.connect.len);
      return;
    case IoCode::kRecv:
      io_uring_prep_recv(sqe, op.fd, op.transfer.buf, op.transfer.len, op.transfer.flags);
      if (op.expect_wait) sqe->ioprio |= IORING_RECVSEND_POLL_FIRST;
      return;
    case IoCode::kSend:
      io_uring_prep_send(sqe, op.fd, op.transfer.buf, op.transfer.len, op.transfer.flags);
      if (op.expect_wait) sqe->ioprio |= IORING_RECVSEND_POLL_FIRST;
      return;
    case IoCode::kRecvPooled:
      io_uring_prep_recv(sqe, op.fd, nullptr, BufferPool::kSize, op.recv_pooled.flags);
      sqe->flags |= IOSQE_BUFFER_SELECT;
      sqe->buf_group = kReceiveGroup;
      if (op.expect_wait) sqe->ioprio |= IORING_RECVSEND_POLL_FIRST;
      return;
    case IoCode::kSendmsg:
      io_uring_prep_sendmsg(sqe, op.fd, op.sendmsg.msg, static_cast<unsigned>(op.sendmsg.flags));
      return;
    case IoCode::kRead:
      io_uring_prep_read(sqe, op.fd, op.read.buf, static_cast<unsigned>(op.read.len),
                         op.read.offset);
      sqe->rw_flags = op.read.rw_flags;
      return;
    case IoCode::kWrite:
      if (op.write.count == 1) {
        io_uring_prep_write(sqe, op.fd, op.write.iov[0].iov_base,
                            static_cast<unsigned>(op.write.iov[0].iov_len), op.write.offset);
      } else {
        io_uring_prep_writev(sqe, op.fd, op.write.iov, op.write.count, op.write.offset);
      }
      sqe->rw_flags = op.write.rw_flags;
      // XFS and btrfs take a buffered RWF_DSYNC write inline and then wait
      // for the disk inside io_uring_enter, blocking the worker: a sync
      // write always goes to an io-wq thread.
      if ((op.write.rw_flags & RWF_DSYNC) != 0) sqe->flags |= IOSQE_ASYNC;
      return;
    case IoCode::kFsync:
      io_uring_prep_fsync(sqe, op.fd, op.datasync ? IORING_FSYNC_DATASYNC : 0);
      return;
    case IoCode::kOpenat:
      io_uring_prep_openat(sqe, op.fd, op.path.path, op.path.flags | O_CLOEXEC, op.path.mode);
      return;
    case IoCode::kOpenat2:
      // The kernel copies `how` when it takes the SQE; nothing writes
      // through liburing's non-const parameter.
      io_uring_prep_openat2(sqe, op.fd, op.openat2.path, const_cast<open_how*>(op.openat2.how));
      return;
    case IoCode::kStatx:
      io_uring_prep_statx(sqe, op.fd, op.path.path, op.path.flags, op.path.mode, op.path.statx);
      return;
    case IoCode::kMkdirat:
      io_uring_prep_mkdirat(sqe, op.fd, op.path.path, op.path.mode);
      return;
    case IoCode::kUnlinkat:
      io_uring_prep_unlinkat(sqe, op.fd, op.path.path, op.path.flags);
      return;
    case IoCode::kRenameat:
      io_uring_prep_renameat(sqe, op.fd, op.rename.old_path, op.rename.new_dirfd,
                             op.rename.new_path, op.rename.flags);
      return;
    case IoCode::kFtruncate:
      // io_uring_prep_rw zeroes what io_ftruncate_prep requires zero
      // (rw_flags, addr, len, buf_index, splice_fd_in, addr3).
      io_uring_prep_rw(kOpFtruncate, sqe, op.fd, nullptr, 0, op.length);
      return;
    case IoCode::kPoll:
      io_uring_prep_poll_add(sqe, op.fd, op.events);
      return;
    case IoCode::kReadv:
      io_uring_prep_readv(sqe, op.fd, op.readv.iov, op.readv.count, op.readv.offset);
      sqe->rw_flags = op.readv.rw_flags;
      return;
    case IoCode::kFallocate:
      io_uring_prep_fallocate(sqe, op.fd, op.fallocate.mode,
                              static_cast<off_t>(op.fallocate.offset),
                              static_cast<off_t>(op.fallocate.length));
      return;
    case IoCode::kSplice:
      // kStreamOffset is the ring's -1: no offset.
      io_uring_prep_splice(sqe, op.fd, static_cast<std::int64_t>(op.splice.offset_in),
                           op.splice.fd_out, static_cast<std::int64_t>(op.splice.offset_out),
                           op.splice.len, op.splice.flags);
      return;
    case IoCode::kRecvmsg:
      io_uring_prep_recvmsg(sqe, op.fd, op.recvmsg.msg, static_cast<unsigned>(op.recvmsg.flags));
      if (op.expect_wait) sqe->ioprio |= IORING_RECVSEND_POLL_FIRST;
      return;
    case IoCode::kWaitid:
      // As io_uring_prep_waitid: fd the id, len the idtype, file_index the
      // options, addr2 (after prep_rw, which zeroes it) the siginfo.
      io_uring_prep_rw(kOpWaitid, sqe, op.fd, nullptr, P_PIDFD, 0);
      sqe->file_index = static_cast<std::uint32_t>(op.waitid.options);
      sqe->addr2 = reinterpret_cast<std::uintptr_t>(op.waitid.info);
      return;
    case IoCode::kSqe:
      op.sqe.prepare(op.sqe.ctx, sqe);
      return;
  }
}

// ftruncate(2) on the blocking pool, for a ring without IORING_OP_FTRUNCATE.
// The pool may outlive an aborted caller's wait: it gets its own fd.
Result<int> ftruncate_on_pool(int fd, std::uint64_t length) noexcept {
  const int dup = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (dup < 0) return errno_failure(errno);
  try {
    auto done = spawn_blocking([held = UniqueFd(dup), length]() -> int {
      return ::ftruncate(held.get(), static_cast<off_t>(length)) == 0 ? 0 : errno;
    });
    auto r = done.join();
    if (!r) return failure(r.error());
    if (*r != 0) return errno_failure(*r);
    return 0;
  } catch (const std::bad_alloc&) {
    return errno_failure(ENOMEM);
  }
}

}  // namespace

void UringRequest::prepare(uring::Operation* self, io_uring_sqe* sqe) noexcept {
  prepare_sqe(*static_cast<UringRequest*>(self)->op, sqe);
}

void UringRequest::on_cqe(uring::Operation* self, int res, std::uint32_t flags) noexcept {
  // An operation that a cancel interrupted on an io-wq thread (a splice
  // waiting for its pipe) may report the kernel's own restart codes
  // (ERESTARTSYS to ERESTART_RESTARTBLOCK): to us that is EINTR.
  if (res <= -kErestartSys && res >= -kErestartLast) res = -EINTR;
  auto& r = *static_cast<UringRequest*>(self);
  if (uring::BufferRing::has_buffer(flags)) [[unlikely]] {
    static_cast<UringDriver&>(r.driver).received(*r.op, res, flags);
  }
  if (r.in_turn) {
    // Its fiber is running, inside complete_in_turn(): nothing to wake.
    r.in_turn = false;
    r.driver.count_ended();
    r.result = res;
    return;
  }
  complete_io(r, res);
}

UringDriver::UringDriver(const Config& config, EventFd& wake, const WorkerRemote& self)
    : IoDriver(true, config.max_io_in_flight),
      wake_(wake),
      wake_poll_(wake.fd()),
      ring_(uring::RingOptions{config.ring_entries, config.on_log}) {
  try {
    buffer_ring_.emplace(ring_, BufferPool::kCount, kReceiveGroup);
  } catch (const std::system_error& e) {
    // Incremental buffer rings came with Linux 6.12. Without one, pooled
    // receives still work, each with a buffer of its own.
    static std::once_flag noted;
    std::call_once(noted, [&] {
      write_log(config.on_log, LogLevel::kInfo,
                std::string(e.what()) + "; each pooled receive holds a buffer while it waits");
    });
    return;
  }
  receive_pool_ = BufferPool::create(self);
  hand_back();
}

void UringDriver::hand_back() noexcept {
  std::uint32_t id = 0;
  while (receive_pool_->take(id)) {
    receive_pool_->hand_to_kernel(id);
    buffer_ring_->add(receive_pool_->buffer(id), BufferPool::kSize, static_cast<std::uint16_t>(id));
  }
  buffer_ring_->publish();
}

void UringDriver::received(const IoOp& op, int res, std::uint32_t cqe_flags) noexcept {
  // The kernel reports a buffer only with bytes in it; it keeps using one
  // it has not filled (IORING_CQE_F_BUF_MORE).
  if (res <= 0) return;
  io::PooledBuffer* out = op.code == IoCode::kRecvPooled ? op.recv_pooled.out : nullptr;
  receive_pool_->filled(uring::BufferRing::buffer_id(cqe_flags), static_cast<std::size_t>(res), out,
                        !uring::BufferRing::more(cqe_flags));
}

void UringDriver::wait(std::optional<std::chrono::nanoseconds> timeout, std::size_t completions,
                       std::size_t max) noexcept {
  refill();
  wake_poll_.arm(ring_);
  ring_.wait(timeout, completions, max);
  if (wake_poll_.consume()) wake_.drain();
}

bool UringDriver::supports(IoCode code) const noexcept {
  if (code == IoCode::kRecvPooled) return buffer_ring_.has_value();
  if (code != IoCode::kFtruncate && code != IoCode::kWaitid) return true;
  // One probe ring, once per process.
  static const uring::KernelSupport support = [] {
    try {
      return uring::require_kernel_support();
    } catch (...) {
      return uring::KernelSupport{};
    }
  }();
  return code == IoCode::kFtruncate ? support.op_ftruncate : support.op_waitid;
}

Result<int> UringDriver::perform(Fiber* f, const IoOp& op, const IoOptions& options) noexcept {
  return run(*current_worker(), f, op, options);
}

bool UringDriver::complete_in_turn(Worker& w, UringRequest& r) noexcept {
  r.in_turn = true;
  ring_.submit(&r);
  w.service_io_in_turn();
  if (!r.in_turn) return true;
  // Still in the kernel. Until the fiber's park is armed nothing can
  // complete it: only this worker's thread, running the fiber, reaps CQEs.
  r.in_turn = false;
  return false;
}

Result<int> UringDriver::perform_without_opcode(Fiber* f, const IoOp& op,
                                                const IoOptions& options) noexcept {
  if (op.code == IoCode::kFtruncate) return ftruncate_on_pool(op.fd, op.length);
  // A ring without IORING_OP_WAITID: waitid(WNOHANG), else a POLL_ADD on
  // the pidfd, after which run_io tries again.
  if (const int now = waitid_now(op); now != -EAGAIN) {
    return now == 0 ? Result<int>(0) : errno_failure(-now);
  }
  IoOp poll(IoCode::kPoll, op.fd);
  poll.events = POLLIN;
  if (auto r = issue(*current_worker(), f, poll, options); !r) return r;
  return errno_failure(EINTR);
}

void UringDriver::publish(void* request) noexcept {
  auto& r = *static_cast<UringRequest*>(static_cast<IoRequest*>(request));
  static_cast<UringDriver&>(r.driver).ring_.submit(&r);
  published(r);
}

void UringDriver::published_in_turn(void* request) noexcept {
  published(*static_cast<IoRequest*>(request));
}

void UringDriver::cancel(IoRequest& r) noexcept { ring_.cancel(static_cast<UringRequest*>(&r)); }

void UringDriver::offload_done(Fiber*) noexcept {
  SPINDLE_ASSERT(false, "an IoDone message for the io_uring backend");
}

std::unique_ptr<IoBackend> make_uring_backend(Scheduler& scheduler, WorkerRemote& self,
                                              EventFd& wake) {
  return std::make_unique<UringDriver>(scheduler.config, wake, self);
}

}  // namespace spindle::detail
