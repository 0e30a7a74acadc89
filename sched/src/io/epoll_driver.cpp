// The epoll backend: the life of one receive.
//
//   perform()   on the fiber: recv(MSG_DONTWAIT) at once, unless the fd is
//               known not to be ready (below) or, for an fd without an id,
//               IoOptions::expect_wait says so; done unless EAGAIN
//   park()      an EpollRequest on the fiber's stack, park_on_io()
//   publish()   on the worker, the fiber's park armed: watch() adds it to
//               its fd's waiters, and registers the fd (keep) or arms it
//               one-shot (arm)
//   service()/wait()  epoll_wait reports the fd; dispatch() completes the
//               waiters its events answer (complete_io)
//   perform()   tries the receive again on the fiber, wherever it now
//               runs; should the fd not be ready after all, run_io comes
//               back to wait again.
//
// An fd with an IoOptions::fd_id (a socket of net/) is registered once per
// worker, edge-triggered, and stays in the set: then a wait costs no
// system call, and the worker remembers the events reported since a try
// last found the fd not ready (EAGAIN, or a TCP socket's receive shorter
// than asked), so a fiber that read everything waits without the try that
// would find nothing. The id tells a reused fd number from the fd it was: a
// new id registers again (the kernel dropped the closed file's
// registration). A worker never takes an fd out of its set: only a fiber
// using the fd knows it is open (another worker's fiber may close it at any
// moment), so a worker whose fibers moved elsewhere keeps being told of
// their fds until they are closed. An fd without an id is armed one-shot
// per wait (one epoll_ctl),
// which tolerates any use: MOD says ENOENT for an fd closed and reused, and
// it is added again.
//
// A pooled receive (kRecvPooled) is a receive whose try takes a buffer from
// the worker's receive pool for the recv, and gives it back unless bytes
// came: a wait holds none.
//
// A splice between pipes and sockets is tried at once (a socket made
// O_NONBLOCK, as for accept and connect) and, not ready, waits for the end
// that holds it up, as a poll of that fd; one that involves a regular file
// or another kind of fd runs on the blocking pool.
//
// A wait holds no buffer: cancelling one (deadline, abort) only unlinks it.
// A call on the blocking pool (files: reads the page cache cannot serve at
// once, writes, syncs, opens, ...) is cancelled only while it waits for a
// pool thread (the pool gives it back unrun); once started it ends when the
// call returns, and the pool thread hands it back through the worker's
// mailbox (MailMessage::kIoDone). Completions never run inside a publish:
// finish_later() queues them for the next service.

#include "io/epoll_driver.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include "core/scheduler.hpp"
#include "core/worker_remote.hpp"
#include "park/event_fd.hpp"
#include "spindle/base/assert.hpp"
#include "spindle/sched/this_fiber.hpp"

namespace spindle::detail {
namespace {

constexpr std::uint64_t kWakeKey = ~std::uint64_t{0};
constexpr std::uint32_t kImmediateBudget = 64;
constexpr int kMaxEvents = 64;  // per epoll_wait

int sys(long ret) noexcept { return ret >= 0 ? static_cast<int>(ret) : -errno; }

off_t offset_of(std::uint64_t offset) noexcept {
  return offset == io::kStreamOffset ? -1 : static_cast<off_t>(offset);
}

// preadv2/pwritev2 at `offset`; a pipe or socket (ESPIPE) at its position.
long read_at(int fd, const iovec* iov, int n, std::uint64_t offset, int flags) noexcept {
  long r = ::preadv2(fd, iov, n, offset_of(offset), flags);
  if (r < 0 && errno == ESPIPE) r = ::preadv2(fd, iov, n, -1, flags);
  return r;
}

long write_at(int fd, const iovec* iov, int n, std::uint64_t offset, int flags) noexcept {
  long r = ::pwritev2(fd, iov, n, offset_of(offset), flags);
  if (r < 0 && errno == ESPIPE) r = ::pwritev2(fd, iov, n, -1, flags);
  return r;
}

// The events a readiness wait for `op` waits for.
std::uint32_t readiness(const IoOp& op) noexcept {
  switch (op.code) {
    case IoCode::kAccept:
    case IoCode::kRecv:
    case IoCode::kRecvPooled:
    case IoCode::kRecvmsg:
    case IoCode::kRead:
    case IoCode::kReadv:
      return EPOLLIN | EPOLLRDHUP;
    case IoCode::kWaitid:
      return EPOLLIN;  // a pidfd is readable once its process has exited
    case IoCode::kConnect:
    case IoCode::kSend:
    case IoCode::kSendmsg:
    case IoCode::kWrite:
      return EPOLLOUT;
    case IoCode::kPoll:
      return op.events;  // poll(2)'s POLLIN, POLLOUT, ... are epoll's bits
    default:
      return 0;
  }
}

// Operations that run on the blocking pool: those on regular files that
// have no non-blocking form, and writes that wait for the disk.
bool on_pool(const IoOp& op) noexcept {
  switch (op.code) {
    case IoCode::kFsync:
    case IoCode::kOpenat:
    case IoCode::kOpenat2:
    case IoCode::kStatx:
    case IoCode::kMkdirat:
    case IoCode::kUnlinkat:
    case IoCode::kRenameat:
    case IoCode::kFtruncate:
    case IoCode::kFallocate:
      return true;
    case IoCode::kWrite:
      return (op.write.rw_flags & (RWF_DSYNC | RWF_SYNC)) != 0;
    default:
      return false;
  }
}

using Transfer = long (*)(int fd, const iovec* iov, int n, std::uint64_t offset,
                          int flags) noexcept;

// A read or write (`call`) tried with RWF_NOWAIT. Where that is refused
// (EOPNOTSUPP): still -EOPNOTSUPP for a regular file (the pool's), -EAGAIN
// for a stream not ready for `events`, else the plain call, which then
// does not block.
int transfer_now(Transfer call, short events, int fd, const iovec* iov, int n, std::uint64_t offset,
                 int flags) noexcept {
  const int r = sys(call(fd, iov, n, offset, flags | RWF_NOWAIT));
  if (r != -EOPNOTSUPP) return r;
  struct stat st{};
  if (::fstat(fd, &st) != 0) return -errno;
  if (S_ISREG(st.st_mode)) return -EOPNOTSUPP;
  pollfd p{fd, events, 0};
  const int ready = ::poll(&p, 1, 0);
  if (ready < 0) return -errno;
  return ready == 0 ? -EAGAIN : sys(call(fd, iov, n, offset, flags));
}

// A read or write, which a file system without RWF_NOWAIT (EOPNOTSUPP) or
// a regular file (epoll's EPERM) sends to the pool.
bool file_transfer(IoCode code) noexcept {
  return code == IoCode::kRead || code == IoCode::kReadv || code == IoCode::kWrite;
}

// splice(2) of `op` with `flags` added.
int splice_now(const IoOp& op, unsigned flags) noexcept {
  loff_t in = static_cast<loff_t>(op.splice.offset_in);
  loff_t out = static_cast<loff_t>(op.splice.offset_out);
  return sys(::splice(op.fd, op.splice.offset_in == io::kStreamOffset ? nullptr : &in,
                      op.splice.fd_out, op.splice.offset_out == io::kStreamOffset ? nullptr : &out,
                      op.splice.len, op.splice.flags | flags));
}

// One try that does not block: the result, or -errno (-EAGAIN: not ready).
// The socket calls go through syscall(2), not their libc wrappers, which are
// pthread cancellation points and pay for that on every call: spindle's
// workers are never cancelled.
int try_now(const IoOp& op) noexcept {
  switch (op.code) {
    case IoCode::kAccept:
      return sys(::accept4(op.fd, op.accept.addr, op.accept.len, op.accept.flags));
    case IoCode::kRecv:
      return sys(::syscall(SYS_recvfrom, op.fd, op.transfer.buf, op.transfer.len,
                           op.transfer.flags | MSG_DONTWAIT, nullptr, nullptr));
    case IoCode::kSend:
      return sys(::syscall(SYS_sendto, op.fd, op.transfer.buf, op.transfer.len,
                           op.transfer.flags | MSG_DONTWAIT, nullptr, 0));
    case IoCode::kSendmsg:
      return sys(::syscall(SYS_sendmsg, op.fd, op.sendmsg.msg, op.sendmsg.flags | MSG_DONTWAIT));
    case IoCode::kRecvmsg:
      return sys(::syscall(SYS_recvmsg, op.fd, op.recvmsg.msg, op.recvmsg.flags | MSG_DONTWAIT));
    case IoCode::kRead: {
      const iovec v{op.read.buf, op.read.len};
      return transfer_now(read_at, POLLIN, op.fd, &v, 1, op.read.offset, op.read.rw_flags);
    }
    case IoCode::kReadv:
      return transfer_now(read_at, POLLIN, op.fd, op.readv.iov, static_cast<int>(op.readv.count),
                          op.readv.offset, op.readv.rw_flags);
    case IoCode::kWrite:
      return transfer_now(write_at, POLLOUT, op.fd, op.write.iov, static_cast<int>(op.write.count),
                          op.write.offset, op.write.rw_flags);
    case IoCode::kSplice:
      return splice_now(op, SPLICE_F_NONBLOCK);
    case IoCode::kPoll: {
      pollfd p{op.fd, static_cast<short>(op.events), 0};
      const int n = ::poll(&p, 1, 0);
      if (n < 0) return -errno;
      return n == 0 ? -EAGAIN : p.revents;
    }
    case IoCode::kWaitid:
      return waitid_now(op);
    default:
      return -EINVAL;
  }
}

// The blocking system call of an operation on the pool.
int call_blocking(const IoOp& op) noexcept {
  switch (op.code) {
    case IoCode::kRead: {
      const iovec v{op.read.buf, op.read.len};
      return sys(read_at(op.fd, &v, 1, op.read.offset, op.read.rw_flags));
    }
    case IoCode::kReadv:
      return sys(read_at(op.fd, op.readv.iov, static_cast<int>(op.readv.count), op.readv.offset,
                         op.readv.rw_flags));
    case IoCode::kWrite:
      return sys(write_at(op.fd, op.write.iov, static_cast<int>(op.write.count), op.write.offset,
                          op.write.rw_flags));
    case IoCode::kFsync:
      return sys(op.datasync ? ::fdatasync(op.fd) : ::fsync(op.fd));
    case IoCode::kOpenat:
      return sys(::openat(op.fd, op.path.path, op.path.flags | O_CLOEXEC, op.path.mode));
    case IoCode::kOpenat2:  // glibc 2.36 has no wrapper
      return sys(::syscall(SYS_openat2, op.fd, op.openat2.path, op.openat2.how, sizeof(open_how)));
    case IoCode::kStatx:
      return sys(::statx(op.fd, op.path.path, op.path.flags, op.path.mode, op.path.statx));
    case IoCode::kMkdirat:
      return sys(::mkdirat(op.fd, op.path.path, op.path.mode));
    case IoCode::kUnlinkat:
      return sys(::unlinkat(op.fd, op.path.path, op.path.flags));
    case IoCode::kRenameat:
      return sys(::renameat2(op.fd, op.rename.old_path, op.rename.new_dirfd, op.rename.new_path,
                             op.rename.flags));
    case IoCode::kFtruncate:
      return sys(::ftruncate(op.fd, static_cast<off_t>(op.length)));
    case IoCode::kFallocate:
      return sys(::fallocate(op.fd, op.fallocate.mode, static_cast<off_t>(op.fallocate.offset),
                             static_cast<off_t>(op.fallocate.length)));
    case IoCode::kSplice:
      return splice_now(op, 0);
    default:
      return -EINVAL;
  }
}

// Accept and connect try at once, so the socket must not block.
int ensure_nonblocking(int fd) noexcept {
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0) return errno;
  if ((flags & O_NONBLOCK) == 0 && ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) return errno;
  return 0;
}

// Whether a splice can be tried at once: both ends pipes or sockets. A
// socket is made O_NONBLOCK first (SPLICE_F_NONBLOCK covers only the pipe
// end). A regular file, or any other fd, sends it to the pool: `on_pool`.
// 0, or the errno of fstat or fcntl.
int route_splice(const IoOp& op, bool& on_pool) noexcept {
  const int ends[2] = {op.fd, op.splice.fd_out};
  bool socket[2] = {};
  for (int i = 0; i < 2; ++i) {
    struct stat st{};
    if (::fstat(ends[i], &st) != 0) return errno;
    socket[i] = S_ISSOCK(st.st_mode);
    if (!socket[i] && !S_ISFIFO(st.st_mode)) on_pool = true;
  }
  for (int i = 0; i < 2 && !on_pool; ++i) {
    if (socket[i]) {
      if (const int err = ensure_nonblocking(ends[i])) return err;
    }
  }
  return 0;
}

}  // namespace

void EpollRequest::run() noexcept {
  pool_result = call_blocking(*op);
  // The last touch of this request: once the owner has the message, the
  // fiber may complete, resume and leave the frame that holds it.
  owner->send({MailMessage::Kind::kIoDone, fiber, epoch});
}

EpollDriver::EpollDriver(const Config& config, EventFd& wake, BlockingPool& pool,
                         WorkerRemote& self)
    : IoDriver(false, config.max_io_in_flight),
      wake_(wake),
      pool_(pool),
      self_(self),
      epoll_(::epoll_create1(EPOLL_CLOEXEC)),
      receive_pool_(BufferPool::create(self)) {
  if (!epoll_) throw std::system_error(errno, std::system_category(), "spindle: epoll_create1");
  epoll_event ev{};
  ev.events = EPOLLIN;  // level-triggered: readable until wait() drains it
  ev.data.u64 = kWakeKey;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, wake.fd(), &ev) != 0) {
    throw std::system_error(errno, std::system_category(), "spindle: epoll_ctl of the wake fd");
  }
}

Result<int> EpollDriver::perform(Fiber* f, const IoOp& op, const IoOptions& options) noexcept {
  if (auto refused = refusal(*this, f, options)) [[unlikely]]
    return failure(*refused);
  using Mode = EpollRequest::Mode;
  if (op.code == IoCode::kNop) return park(f, op, options, Mode::kNext);
  if (on_pool(op)) return park(f, op, options, Mode::kPool);
  if (op.code == IoCode::kSplice) return perform_splice(f, op, options);
  if (op.code == IoCode::kAccept || op.code == IoCode::kConnect) {
    Watched* w = op.fd_id != 0 && op.fd >= 0 ? &slot(op.fd) : nullptr;
    if (w == nullptr || w->nonblocking_id != op.fd_id) {
      if (const int err = ensure_nonblocking(op.fd)) return errno_failure(err);
      if (w != nullptr) w->nonblocking_id = op.fd_id;
    }
  }
  if (op.code == IoCode::kConnect) {
    if (::connect(op.fd, op.connect.addr, op.connect.len) == 0) return 0;
    if (errno != EINPROGRESS && errno != EINTR) return errno_failure(errno);
    auto r = park(f, op, options, Mode::kWatch, EPOLLOUT);  // `this` may be another worker's now
    if (!r) return r;
    int err = 0;
    socklen_t len = sizeof err;
    if (::getsockopt(op.fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno_failure(errno);
    if (err != 0) return errno_failure(err);
    return 0;
  }
  const std::uint32_t events = readiness(op);
  // An fd registered for these events says whether a try can find it
  // ready; otherwise the caller's hint does.
  Watched* w = registration(op, events);
  if (w != nullptr ? (w->ready & events) != 0 : !op.expect_wait) {
    const int res = attempt(op, w, events);
    if (res >= 0) return done_at_once(res);
    // RWF_NOWAIT refused (a file system without it): the call on the pool.
    if (res == -EOPNOTSUPP && file_transfer(op.code)) {
      return park(f, op, options, Mode::kPool);
    }
    if (res != -EAGAIN) return errno_failure(-res);
  }
  immediate_ = 0;
  auto r = park(f, op, options, Mode::kWatch, events);
  // `this` may be another worker's driver now.
  auto& here = static_cast<EpollDriver&>(current_driver());
  if (!r) {
    // epoll refuses regular files (EPERM): a read the page cache could not
    // serve at once runs on the pool.
    if (r.error() == std::errc::operation_not_permitted && file_transfer(op.code)) {
      return here.park(f, op, options, Mode::kPool);
    }
    return r;
  }
  if (op.code == IoCode::kPoll) return r;
  // Ready: try again here; if the fd is not ready after all, run_io comes
  // back to wait again.
  const int res = here.attempt(op, here.registration(op, events), events);
  if (res >= 0) return res;
  return errno_failure(res == -EAGAIN ? EINTR : -res);
}

Result<int> EpollDriver::done_at_once(int res) noexcept {
  if (++immediate_ == kImmediateBudget) {
    immediate_ = 0;
    if (auto y = this_fiber::yield(); !y) return failure(y.error());
  }
  return res;
}

Result<int> EpollDriver::perform_splice(Fiber* f, const IoOp& op,
                                        const IoOptions& options) noexcept {
  bool pool = false;
  if (const int err = route_splice(op, pool)) return errno_failure(err);
  if (pool) return park(f, op, options, EpollRequest::Mode::kPool);
  const int res = try_now(op);
  if (res >= 0) return done_at_once(res);
  if (res != -EAGAIN) return errno_failure(-res);
  immediate_ = 0;
  // Not ready: wait for the end that holds it up (the input empty, or the
  // output full), then run_io tries again.
  pollfd ends[2] = {{op.fd, POLLIN, 0}, {op.splice.fd_out, POLLOUT, 0}};
  if (::poll(ends, 2, 0) < 0) return errno_failure(errno);
  // Both ready by now: again after a yield.
  if (ends[0].revents != 0 && ends[1].revents != 0) return errno_failure(EAGAIN);
  const bool input = ends[0].revents == 0;
  IoOp wait(IoCode::kPoll, input ? op.fd : op.splice.fd_out);
  wait.events = input ? EPOLLIN | EPOLLRDHUP : EPOLLOUT;
  auto r = park(f, wait, options, EpollRequest::Mode::kWatch, wait.events);
  if (!r) return r;
  return errno_failure(EINTR);  // ready: run_io tries again at once
}

int EpollDriver::receive_pooled(const IoOp& op) noexcept {
  std::uint32_t id = 0;
  if (!receive_pool_->take(id)) return -ENOBUFS;
  const int res = sys(::syscall(SYS_recvfrom, op.fd, receive_pool_->buffer(id), BufferPool::kSize,
                                op.recv_pooled.flags | MSG_DONTWAIT, nullptr, nullptr));
  if (res > 0) {
    receive_pool_->lend(*op.recv_pooled.out, id, 0, static_cast<std::size_t>(res));
  } else {
    receive_pool_->put(id);
  }
  return res;
}

int EpollDriver::attempt(const IoOp& op, Watched* w, std::uint32_t events) noexcept {
  const bool pooled = op.code == IoCode::kRecvPooled;
  const int res = pooled ? receive_pooled(op) : try_now(op);
  if (w == nullptr) return res;
  const bool whole_recv = pooled ? (op.recv_pooled.flags & MSG_PEEK) == 0
                                 : op.code == IoCode::kRecv && (op.transfer.flags & MSG_PEEK) == 0;
  if (res == -EAGAIN) {
    w->ready &= ~events;  // nothing until epoll reports the fd again
  } else if (w->tcp && whole_recv && res > 0 &&
             static_cast<std::size_t>(res) < (pooled ? BufferPool::kSize : op.transfer.len)) {
    // A TCP socket that gave less than asked has no data left; an end of
    // stream or an error reported with that data still stands. (A Unix stream
    // socket's receive also ends after bytes that carried descriptors, with
    // more queued.)
    w->ready &= ~std::uint32_t{EPOLLIN};
  }
  return res;
}

Result<int> EpollDriver::park(Fiber* f, const IoOp& op, const IoOptions& options,
                              EpollRequest::Mode mode, std::uint32_t events) {
  EpollRequest r(*this, f, op, options, mode, events, &self_);
  count_started();
  park_on_io(r, &publish);
  return io_result(r);
}

void EpollDriver::publish(void* request) noexcept {
  auto& r = static_cast<EpollRequest&>(*static_cast<IoRequest*>(request));
  auto& d = static_cast<EpollDriver&>(r.driver);
  if (r.mode == EpollRequest::Mode::kNext) {
    d.finish_later(r, 0);
  } else if (r.mode == EpollRequest::Mode::kPool) {
    // The pool closes only after every worker has left its loop.
    const bool queued = d.pool_.submit(&r);
    SPINDLE_ASSERT(queued, "an I/O call for a closed blocking pool");
  } else {
    d.watch(r);
  }
  published(r);
}

EpollDriver::Watched& EpollDriver::slot(int fd) {
  const auto i = static_cast<std::size_t>(fd);
  if (fds_.size() <= i) fds_.resize(i + 1);
  return fds_[i];
}

EpollDriver::Watched* EpollDriver::registration(const IoOp& op, std::uint32_t events) noexcept {
  if (op.fd_id == 0 || op.fd < 0 || static_cast<std::size_t>(op.fd) >= fds_.size()) return nullptr;
  Watched& w = fds_[static_cast<std::size_t>(op.fd)];
  if (w.id != op.fd_id) return nullptr;
  return (w.registered & events) == events ? &w : nullptr;
}

void EpollDriver::watch(EpollRequest& r) noexcept {
  const int fd = r.op->fd;
  if (fd < 0) {
    finish_later(r, -EBADF);
    return;
  }
  Watched& w = slot(fd);
  const std::uint64_t id = r.op->fd_id;
  // Reported since the try that sent the fiber here (another fiber's
  // wait on the same fd may have taken the event).
  if (id != 0 && w.id == id && (w.ready & r.interest) != 0) {
    finish_later(r, 0);
    return;
  }
  w.waiters.push_back(&r);
  if (const int err = id != 0 ? keep(fd, w, id) : arm(fd, w)) {
    w.waiters.remove(&r);
    finish_later(r, -err);
  }
}

// epoll_ctl `op` on `fd` for `events`; ADD for an fd no longer in the set
// (closed since: its number is another file's now), MOD for one that is.
int EpollDriver::control(int op, int fd, std::uint32_t events) noexcept {
  epoll_event ev{};
  ev.events = events;
  ev.data.u64 = static_cast<std::uint64_t>(fd);
  int rc = ::epoll_ctl(epoll_.get(), op, fd, &ev);
  if (rc != 0 && errno == ENOENT) {
    rc = ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev);
  } else if (rc != 0 && errno == EEXIST) {
    rc = ::epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, fd, &ev);
  }
  return rc != 0 ? errno : 0;
}

std::uint32_t EpollDriver::Watched::wanted() const noexcept {
  std::uint32_t events = 0;
  for (const EpollRequest* x = waiters.front(); x; x = Waiters::next(x)) events |= x->interest;
  return events;
}

int EpollDriver::arm(int fd, Watched& w) noexcept {
  if (const int err =
          control(w.in_set ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, EPOLLONESHOT | w.wanted())) {
    return err;
  }
  w.in_set = true;
  w.id = 0;
  return 0;
}

int EpollDriver::keep(int fd, Watched& w, std::uint64_t id) noexcept {
  const std::uint32_t wanted = w.wanted();
  if (w.id == id && (w.registered & wanted) == wanted) return 0;
  // Registering (ADD, or MOD from one-shot) reports the fd at once if it is
  // ready now: nothing from before is lost.
  const std::uint32_t events = (w.id == id ? w.registered : 0) | wanted;
  if (const int err = control(w.in_set ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, fd, EPOLLET | events)) {
    return err;
  }
  if (w.id != id) {
    w.ready = 0;
    int protocol = 0;
    socklen_t len = sizeof protocol;
    w.tcp =
        ::getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &len) == 0 && protocol == IPPROTO_TCP;
  }
  w.in_set = true;
  w.id = id;
  w.registered = events;
  return 0;
}

void EpollDriver::finish_later(EpollRequest& r, int result) noexcept {
  r.pool_result = result;
  r.finishing = true;
  finished_.push_back(&r);
}

void EpollDriver::complete_finished() noexcept {
  while (EpollRequest* r = finished_.front()) {
    finished_.remove(r);
    complete_io(*r, r->pool_result);
  }
}

void EpollDriver::cancel(IoRequest& request) noexcept {
  auto& r = static_cast<EpollRequest&>(request);
  if (r.finishing) return;  // it has its result
  if (r.mode == EpollRequest::Mode::kPool) {
    // A call no pool thread has started never touches the buffers: taken
    // back, it is cancelled. A started one runs to its end.
    if (pool_.withdraw(&r)) finish_later(r, -ECANCELED);
    return;
  }
  if (r.mode != EpollRequest::Mode::kWatch) return;
  fds_[static_cast<std::size_t>(r.op->fd)].waiters.remove(&r);
  finish_later(r, -ECANCELED);
}

void EpollDriver::offload_done(Fiber* fiber) noexcept {
  auto& r = static_cast<EpollRequest&>(*fiber->io_request);
  complete_io(r, r.pool_result);
}

void EpollDriver::dispatch(const epoll_event* events, int n) noexcept {
  for (int i = 0; i < n; ++i) {
    const epoll_event& ev = events[i];
    if (ev.data.u64 == kWakeKey) {
      wake_.drain();
      continue;
    }
    const auto fd = static_cast<std::size_t>(ev.data.u64);
    if (fd >= fds_.size()) continue;
    Watched& w = fds_[fd];
    const std::uint32_t got = ev.events;
    // An error or hang-up answers every wait.
    const bool all = (got & (EPOLLERR | EPOLLHUP)) != 0;
    if (w.id != 0) w.ready |= all ? ~std::uint32_t{0} : got;
    // Complete the waiters the events answer. A one-shot fd is disarmed
    // now: re-arm it for the rest.
    for (EpollRequest* x = w.waiters.front(); x;) {
      EpollRequest* next = Waiters::next(x);
      if (all || (x->interest & got) != 0) {
        w.waiters.remove(x);
        complete_io(*x, x->poll ? static_cast<int>(got & (x->interest | EPOLLERR | EPOLLHUP)) : 0);
      }
      x = next;
    }
    if (w.id == 0 && !w.waiters.empty()) {
      if (const int err = arm(static_cast<int>(fd), w)) {
        while (EpollRequest* x = w.waiters.front()) {
          w.waiters.remove(x);
          complete_io(*x, -err);
        }
      }
    }
  }
}

void EpollDriver::service(std::size_t max) noexcept {
  complete_finished();
  if (pending() == 0) return;
  epoll_event events[kMaxEvents];
  const int n = ::epoll_wait(epoll_.get(), events,
                             static_cast<int>(std::min<std::size_t>(max, kMaxEvents)), 0);
  if (n > 0) dispatch(events, n);
}

void EpollDriver::wait(std::optional<std::chrono::nanoseconds> timeout, std::size_t /*completions*/,
                       std::size_t max) noexcept {
  if (!finished_.empty()) timeout = std::chrono::nanoseconds::zero();
  timespec ts{};
  const timespec* tsp = nullptr;
  if (timeout) {
    const std::int64_t ns = std::max<std::int64_t>(timeout->count(), 0);
    ts.tv_sec = static_cast<time_t>(ns / 1'000'000'000);
    ts.tv_nsec = static_cast<long>(ns % 1'000'000'000);
    tsp = &ts;
  }
  epoll_event events[kMaxEvents];
  const int n = ::epoll_pwait2(
      epoll_.get(), events, static_cast<int>(std::min<std::size_t>(max, kMaxEvents)), tsp, nullptr);
  if (n > 0) dispatch(events, n);
  complete_finished();
}

std::unique_ptr<IoBackend> make_epoll_backend(Scheduler& scheduler, WorkerRemote& self,
                                              EventFd& wake) {
  return std::make_unique<EpollDriver>(scheduler.config, wake, scheduler.blocking, self);
}

}  // namespace spindle::detail
