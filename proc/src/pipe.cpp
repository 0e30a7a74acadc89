// Pipe: io::read and io::write at io::kStreamOffset. Reads and writes are
// cancellable (a deadline or an abort ends them), unlike writes to files: a
// child that stops reading must not hold its writer for ever, and a
// cancelled pipe write moved nothing (a partial one completes with its
// count instead).

#include "spindle/proc/pipe.hpp"

#include <sys/uio.h>

#include <algorithm>
#include <utility>

#include "spindle/sched/io.hpp"

namespace spindle::process {
namespace {

// What read_to_end asks for at a time: a pipe's default capacity.
constexpr std::size_t kReadChunk = 64 * 1024;

std::span<std::byte> bytes(std::span<char> s) noexcept {
  return {reinterpret_cast<std::byte*>(s.data()), s.size()};
}

}  // namespace

Pipe::Pipe(Pipe&& o) noexcept
    : fd_(std::move(o.fd_)), poisoned_(std::exchange(o.poisoned_, false)) {}

Pipe& Pipe::operator=(Pipe&& o) noexcept {
  if (this != &o) {
    fd_ = std::move(o.fd_);
    poisoned_ = std::exchange(o.poisoned_, false);
  }
  return *this;
}

void Pipe::close() noexcept { fd_.reset(); }

Result<Deadline> Pipe::start(const Timeout& timeout) const {
  if (!fd_ || poisoned_) return failure(errc::closed);
  return timeout.deadline();
}

Result<std::size_t> Pipe::read(std::span<std::byte> buf, Timeout timeout) {
  auto deadline = start(timeout);
  if (!deadline) return failure(deadline.error());
  if (buf.empty()) return 0;
  return io::read(fd_.get(), buf, io::kStreamOffset, 0, {.deadline = *deadline});
}

Result<std::size_t> Pipe::read(std::span<char> buf, Timeout timeout) {
  return read(bytes(buf), timeout);
}

Result<void> Pipe::read_exact(std::span<std::byte> buf, Timeout timeout) {
  auto deadline = start(timeout);
  if (!deadline) return failure(deadline.error());
  for (std::size_t done = 0; done < buf.size();) {
    auto r = io::read(fd_.get(), buf.subspan(done), io::kStreamOffset, 0, {.deadline = *deadline});
    if (!r || *r == 0) {
      poisoned_ = true;  // part of the message may be gone already
      return failure(r ? make_error_code(errc::closed) : r.error());
    }
    done += *r;
  }
  return {};
}

Result<void> Pipe::read_exact(std::span<char> buf, Timeout timeout) {
  return read_exact(bytes(buf), timeout);
}

Result<std::size_t> Pipe::read_to_end(std::string& out, Timeout timeout) {
  auto deadline = start(timeout);
  if (!deadline) return failure(deadline.error());
  const std::size_t first = out.size();
  for (;;) {
    const std::size_t had = out.size();
    out.resize(had + kReadChunk);
    auto r = io::read(fd_.get(), std::as_writable_bytes(std::span(out).subspan(had)),
                      io::kStreamOffset, 0, {.deadline = *deadline});
    out.resize(had + r.value_or(0));
    if (!r) return failure(r.error());
    if (*r == 0) return out.size() - first;
  }
}

Result<std::size_t> Pipe::write(std::span<const std::byte> buf, Timeout timeout) {
  auto deadline = start(timeout);
  if (!deadline) return failure(deadline.error());
  if (buf.empty()) return 0;
  const iovec v{const_cast<std::byte*>(buf.data()), buf.size()};
  return io::write(fd_.get(), std::span(&v, 1), io::kStreamOffset, 0, {.deadline = *deadline});
}

Result<void> Pipe::write_all(std::span<const std::byte> buf, Timeout timeout) {
  auto deadline = start(timeout);
  if (!deadline) return failure(deadline.error());
  for (std::size_t done = 0; done < buf.size();) {
    const std::span<const std::byte> rest = buf.subspan(done);
    const iovec v{const_cast<std::byte*>(rest.data()), rest.size()};
    auto r = io::write(fd_.get(), std::span(&v, 1), io::kStreamOffset, 0, {.deadline = *deadline});
    if (!r || *r == 0) {
      poisoned_ = true;  // part of the bytes may be in the pipe already
      return failure(r ? make_error_code(errc::closed) : r.error());
    }
    done += *r;
  }
  return {};
}

Result<void> Pipe::write_all(std::string_view buf, Timeout timeout) {
  return write_all(std::as_bytes(std::span(buf.data(), buf.size())), timeout);
}

}  // namespace spindle::process
