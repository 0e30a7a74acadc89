// Pipe: the parent's end of a child's standard stream (Stdio::kPipe), with
// blocking-style calls that park the calling fiber.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "spindle/base/result.hpp"
#include "spindle/base/timeout.hpp"
#include "spindle/base/unique_fd.hpp"

namespace spindle::process {

// Fiber-only (it may move between fibers and workers); not thread-safe: one
// fiber at a time per Pipe. The Pipes of one Child are independent objects,
// so one fiber may write the child's stdin while another reads its stdout.
// A Pipe goes one way: reads of the child's stdin end, or writes of its
// stdout end, fail with EBADF.
//
// Every read and write is one io::read or io::write at io::kStreamOffset on
// the calling worker's I/O backend, with the deadline of its Timeout. A
// Timeout() waits for ever (a child is not a remote peer: a program may
// think for minutes between two lines): pass one, or use a deadline scope
// (this_fiber::with_timeout), to bound a call. A read or write that fails
// moved no byte, and the Pipe stays usable; read_exact and write_all may
// have moved part of theirs when they fail, and then poison the Pipe (later
// calls fail with errc::closed), as TcpStream's halves do.
//
// A write to a child that closed its stdin fails with EPIPE (the runtime
// ignores SIGPIPE: see Runtime::run).
class Pipe {
 public:
  // Closed: every call fails with errc::closed.
  Pipe() noexcept = default;
  // Takes `fd`, one end of a pipe: blocking on the io_uring backend,
  // O_NONBLOCK on the epoll backend (which spawn arranges).
  explicit Pipe(UniqueFd fd) noexcept : fd_(std::move(fd)) {}
  Pipe(Pipe&& o) noexcept;
  Pipe& operator=(Pipe&& o) noexcept;
  // Closes the pipe (see close()).
  ~Pipe() = default;

  // Reads at least one byte and at most buf.size(); 0 at end of stream (the
  // child closed its end, or exited) or if `buf` is empty.
  // Suspends: until bytes arrive, end of stream, an error, the timeout or an abort.
  Result<std::size_t> read(std::span<std::byte> buf, Timeout timeout = {});
  Result<std::size_t> read(std::span<char> buf, Timeout timeout = {});

  // Reads exactly buf.size() bytes under one timeout; end of stream first is
  // errc::closed.
  // Suspends: until done, end of stream, an error, the timeout or an abort.
  Result<void> read_exact(std::span<std::byte> buf, Timeout timeout = {});
  Result<void> read_exact(std::span<char> buf, Timeout timeout = {});

  // Appends everything up to end of stream to `out` under one timeout;
  // returns how many bytes it appended. What arrived before a failure stays
  // in `out`.
  // Suspends: until end of stream, an error, the timeout or an abort.
  Result<std::size_t> read_to_end(std::string& out, Timeout timeout = {});

  // Writes at least one byte and at most buf.size(): the bytes written.
  // Suspends: until the pipe has room, an error, the timeout or an abort.
  Result<std::size_t> write(std::span<const std::byte> buf, Timeout timeout = {});

  // Writes every byte under one timeout.
  // Suspends: until all bytes are in the pipe, an error, the timeout or an abort.
  Result<void> write_all(std::span<const std::byte> buf, Timeout timeout = {});
  Result<void> write_all(std::string_view buf, Timeout timeout = {});

  // Closes this end now: the child reads end of stream from its stdin once
  // it has read what was written, or gets EPIPE writing its stdout. No
  // operation of this Pipe may be in flight.
  void close() noexcept;

  bool is_open() const noexcept { return bool(fd_); }
  int native_handle() const noexcept { return fd_.get(); }

 private:
  // Checks the pipe is usable; then the deadline of `timeout`.
  Result<Deadline> start(const Timeout& timeout) const;

  UniqueFd fd_;
  bool poisoned_ = false;
};

}  // namespace spindle::process
