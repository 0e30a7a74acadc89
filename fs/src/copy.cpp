// copy and copy_file: between two files, one blocking-pool task of
// synchronous splices through a SplicePipe (FileCopy); elsewhere a buffer.
// send_file: Pump steps through a SplicePipe.
#include "spindle/fs/copy.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <vector>

#include "pump.hpp"
#include "spindle/sched/config.hpp"
#include "spindle/sched/context.hpp"
#include "spindle/sched/runtime.hpp"

namespace spindle::fs {
namespace {

// One splice(2) at both descriptors' positions, blocking; EINTR goes round.
ssize_t splice_blocking(int from, int to, std::size_t len) noexcept {
  ssize_t n;
  do {
    n = ::splice(from, nullptr, to, nullptr, len, 0);
  } while (n < 0 && errno == EINTR);
  return n;
}

}  // namespace

namespace detail {

// copy()'s transfer between two files: splices file -> pipe -> file at the
// descriptors' positions, a chunk of up to the pipe's capacity at a time,
// each chunk drained into `out` before the next is taken, so that between
// chunks the pipe is empty and both positions have moved by `done`.
//
// Thread-safety: run() is the pool task, plain system calls only; stop() is
// the caller's, any time. The results are run()'s until the task has ended,
// which publishes them to its joiner. The caller keeps the descriptors and
// the pipe open until then.
struct FileCopy {
  FileCopy(int from, int to, const SplicePipe& pipe, std::uint64_t len) noexcept
      : in(from),
        out(to),
        pipe_in(pipe.write_.get()),
        pipe_out(pipe.read_.get()),
        capacity(pipe.capacity_),
        length(len) {}

  // Until `length`, the end of `in`, an error or stop(), which ends the
  // copy before a chunk, never within one.
  void run() noexcept {
    while (done < length) {
      // relaxed: the flag guards no data; a chunk more or less is fine.
      if (stopping.load(std::memory_order_relaxed)) return;
      const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(length - done, capacity));
      const ssize_t n = splice_blocking(in, pipe_in, want);
      if (n < 0) error = errno;
      if (n <= 0) break;
      // The pipe was empty: it holds the n bytes, which all go out (a short
      // splice goes round) before anything else happens.
      for (auto held = static_cast<std::size_t>(n); held > 0;) {
        const ssize_t m = splice_blocking(pipe_out, out, held);
        if (m <= 0) {
          // Bytes stay in the pipe and `in` is ahead of `out` by them: the
          // copy fails. The pipe holds them, so an empty splice is a fault.
          error = m < 0 ? errno : EIO;
          ended = true;
          return;
        }
        held -= static_cast<std::size_t>(m);
        done += static_cast<std::uint64_t>(m);
      }
    }
    ended = true;
  }

  void stop() noexcept { stopping.store(true, std::memory_order_relaxed); }

  const int in;
  const int out;
  const int pipe_in;  // the pipe's write end
  const int pipe_out;
  const std::size_t capacity;
  const std::uint64_t length;
  std::atomic<bool> stopping{false};

  // run()'s results.
  std::uint64_t done = 0;  // bytes in `out`
  int error = 0;           // errno of the failed splice, else 0
  bool ended = false;      // run() returned on its own: `length`, the end of `in`, an error
};

}  // namespace detail

namespace {

// A transfer longer than a default pipe (64 KiB) asks for a pipe this
// large: fewer splices per megabyte. Not larger: with 1 MiB pipes the first
// copy of a file just written ran at a fifth of the speed on a VM (2.3 s for
// 1 GiB, the time all in the kernel's copy into the new page cache), where
// 256 KiB pipes and 128 KiB read/write loops took 0.4 s every time.
constexpr std::size_t kDefaultPipe = std::size_t{64} << 10;
constexpr std::size_t kLargePipe = std::size_t{256} << 10;
// The buffer of a copy that cannot splice.
constexpr std::size_t kCopyBuffer = std::size_t{256} << 10;

std::size_t pipe_size(std::uint64_t length) noexcept {
  return length > kDefaultPipe ? kLargePipe : 0;
}

std::size_t chunk(std::uint64_t left) noexcept {
  return static_cast<std::size_t>(std::min<std::uint64_t>(left, io::kMaxTransfer));
}

// All of `header` into `socket`, sent with `flags`.
spindle::Result<void> send_header(int socket, std::span<const std::byte> header, int flags,
                                  const IoOptions& options) {
  while (!header.empty()) {
    auto n = io::send(socket, header, flags, options);
    if (!n) return failure(n.error());
    header = header.subspan(*n);
  }
  return {};
}

// Sends what MSG_MORE or SPLICE_F_MORE held back in a TCP socket's queue:
// setting TCP_NODELAY pushes it, and the option goes back to what it was.
// Other sockets hold nothing back; errors leave nothing to push.
void push(int socket) noexcept {
  int was = 0;
  socklen_t len = sizeof was;
  if (::getsockopt(socket, IPPROTO_TCP, TCP_NODELAY, &was, &len) != 0) return;
  const int on = 1;
  (void)::setsockopt(socket, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  if (was == 0) (void)::setsockopt(socket, IPPROTO_TCP, TCP_NODELAY, &was, sizeof was);
}

bool is_file(const File& f) noexcept {
  struct stat st{};
  return ::fstat(f.native_handle(), &st) == 0 && (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode));
}

bool appends(const File& f) noexcept {
  const int flags = ::fcntl(f.native_handle(), F_GETFL);
  return flags >= 0 && (flags & O_APPEND) != 0;
}

// Whether copy() splices on the blocking pool: between regular files or
// block devices, where no splice waits for another party (a pipe or a
// socket could keep it, and an aborted caller, waiting), into a `to` not
// in append mode (which splice refuses).
bool splices(const File& from, const File& to) noexcept {
  return is_file(from) && is_file(to) && !appends(to);
}

template <class Fail>
Result<std::uint64_t> copy_buffered(File& from, File& to, std::uint64_t length, Fail fail) {
  std::vector<std::byte> buf(std::min<std::uint64_t>(length, kCopyBuffer));
  std::uint64_t done = 0;
  while (done < length) {
    auto n = from.read(std::span(buf).first(std::min<std::uint64_t>(length - done, buf.size())));
    if (!n) return fail(n.error().code);
    if (*n == 0) break;
    if (auto w = to.write_all(std::span(buf).first(*n)); !w) return fail(w.error().code);
    done += *n;
  }
  return done;
}

}  // namespace

Result<std::uint64_t> copy(File& from, File& to, std::uint64_t length) {
  auto fail = [&](std::error_code e) { return detail::fail(e, "copy", from.path(), to.path()); };
  if (!splices(from, to)) return copy_buffered(from, to, length, fail);
  auto pipe = SplicePipe::make(pipe_size(length));
  if (!pipe) return fail(pipe.error().code);
  detail::FileCopy job(from.native_handle(), to.native_handle(), *pipe, length);
  // The task borrows `job`, the pipe and both descriptors: this frame
  // outlives it. An abort (or the deadline scope) ends the first join; the
  // task then stops before its next chunk, and the second join waits for
  // that whatever else happens.
  auto task = spawn_blocking([&job] { job.run(); });
  if (auto joined = task.join(); !joined) {
    job.stop();
    (void)task.join_uninterruptible();
    // Stopped, or never run (its caller was aborted first). Else it ended
    // on its own: its outcome stands.
    if (!job.ended) return fail(joined.error());
  }
  if (job.error != 0) return fail(std::error_code(job.error, std::system_category()));
  return job.done;
}

Result<std::uint64_t> copy_file(const std::filesystem::path& from,
                                const std::filesystem::path& to) {
  auto src = File::open(from);
  if (!src) return std::unexpected(std::move(src.error()));
  auto src_stat = src->stat();
  if (!src_stat) return std::unexpected(std::move(src_stat.error()));
  // Not truncated on opening: `to` may be `from` under another name.
  auto dst = File::open(to, Open::kWrite | Open::kCreate, src_stat->permissions());
  if (!dst) return std::unexpected(std::move(dst.error()));
  auto dst_stat = dst->stat();
  if (!dst_stat) return std::unexpected(std::move(dst_stat.error()));
  if (dst_stat->device == src_stat->device && dst_stat->inode == src_stat->inode) {
    return detail::fail(std::make_error_code(std::errc::invalid_argument), "copy", from, to);
  }
  // Only a file with bytes is truncated: ext4 flushes a file truncated to
  // zero and then written when it is closed (auto_da_alloc), which for a
  // new copy would stall the closing worker for the whole write-back.
  if (dst_stat->size > 0) {
    if (auto r = dst->truncate(0); !r) return std::unexpected(std::move(r.error()));
  }
  return copy(*src, *dst, kToEnd);
}

Result<std::uint64_t> send_file(const File& file, std::uint64_t offset, std::uint64_t length,
                                int socket, const SendFileOptions& options) {
  auto fail = [&](std::error_code e) { return detail::fail(e, "send_file", file.path()); };
  if (length == kToEnd) {
    // The real length, so that only the last splice goes without
    // SPLICE_F_MORE (which holds a partial packet back).
    auto st = file.stat();
    if (!st) return std::unexpected(std::move(st.error()));
    length = st->size > offset ? st->size - offset : 0;
  }
  const IoOptions timed{.deadline = options.timeout.deadline(current_config().read_write_timeout)};
  SplicePipe own;
  SplicePipe* pipe = options.pipe;
  if (pipe == nullptr) {
    auto made = SplicePipe::make(pipe_size(length));
    if (!made) return fail(made.error().code);
    own = std::move(*made);
    pipe = &own;
  }
  // MSG_MORE and SPLICE_F_MORE hold a partial packet back until the next
  // send. The last splice of `length` says neither; a return short of it
  // pushes what the last send held back. Errors push too: they may come
  // part way through a send that said more.
  bool held = false;  // the last send said more
  if (!options.header.empty()) {
    held = length > 0;
    if (auto r = send_header(socket, options.header, held ? MSG_MORE : 0, timed); !r) {
      push(socket);
      return fail(r.error());
    }
  }
  detail::Pump pump{file.native_handle(), offset, socket, timed};
  std::uint64_t done = 0;
  while (done < length) {
    const std::size_t want = chunk(length - done);
    auto n = pump.run(*pipe, want);
    if (!n) {
      push(socket);
      return fail(n.error());
    }
    if (*n == 0) break;
    held = *n < want;
    done += *n;
  }
  if (held) push(socket);
  return done;
}

}  // namespace spindle::fs
