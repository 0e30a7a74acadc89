// copy, copy_file and send_file: Pump steps through a SplicePipe, or a
// buffer where splice cannot write (a destination in append mode).
#include "spindle/fs/copy.hpp"

#include <fcntl.h>

#include <algorithm>
#include <vector>

#include "io_options.hpp"
#include "pump.hpp"
#include "spindle/sched/config.hpp"
#include "spindle/sched/runtime.hpp"

namespace spindle::fs {
namespace {

constexpr std::uint64_t kPosition = io::kStreamOffset;
// A transfer longer than a default pipe (64 KiB) asks for a pipe this
// large: fewer splices per megabyte.
constexpr std::size_t kDefaultPipe = std::size_t{64} << 10;
constexpr std::size_t kLargePipe = std::size_t{1} << 20;
// The buffer of a copy that cannot splice.
constexpr std::size_t kCopyBuffer = std::size_t{256} << 10;

std::size_t pipe_size(std::uint64_t length) noexcept {
  return length > kDefaultPipe ? kLargePipe : 0;
}

std::size_t chunk(std::uint64_t left) noexcept {
  return static_cast<std::size_t>(std::min<std::uint64_t>(left, io::kMaxTransfer));
}

bool appends(const File& f) noexcept {
  const int flags = ::fcntl(f.native_handle(), F_GETFL);
  return flags >= 0 && (flags & O_APPEND) != 0;
}

Result<std::uint64_t> copy_buffered(File& from, File& to, std::uint64_t length) {
  std::vector<std::byte> buf(std::min<std::uint64_t>(length, kCopyBuffer));
  std::uint64_t done = 0;
  while (done < length) {
    auto n = from.read(std::span(buf).first(std::min<std::uint64_t>(length - done, buf.size())));
    if (!n) return std::unexpected(std::move(n.error()));
    if (*n == 0) break;
    if (auto w = to.write_all(std::span(buf).first(*n)); !w) {
      return std::unexpected(std::move(w.error()));
    }
    done += *n;
  }
  return done;
}

// `length` bytes (or to the end) through `pump` and `pipe`; `on_error`
// names the failure.
template <class Fail>
Result<std::uint64_t> pump_all(detail::Pump& pump, SplicePipe& pipe, std::uint64_t length,
                               Fail on_error) {
  std::uint64_t done = 0;
  while (done < length) {
    auto n = pump.run(pipe, chunk(length - done), false);
    if (!n) return on_error(n.error());
    if (*n == 0) break;
    done += *n;
  }
  return done;
}

}  // namespace

Result<std::uint64_t> copy(File& from, File& to, std::uint64_t length) {
  if (appends(to)) return copy_buffered(from, to, length);
  auto fail = [&](std::error_code e) { return detail::fail(e, "copy", from.path(), to.path()); };
  auto pipe = SplicePipe::make(pipe_size(length));
  if (!pipe) return fail(pipe.error().code);
  detail::Pump pump{from.native_handle(), kPosition, to.native_handle(), kPosition, {},
                    detail::kNeverCancel};
  return pump_all(pump, *pipe, length, fail);
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
  if (auto r = dst->truncate(0); !r) return std::unexpected(std::move(r.error()));
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
  detail::Pump pump{file.native_handle(), offset, socket, kPosition, timed, timed};
  return pump_all(pump, *pipe, length, fail);
}

}  // namespace spindle::fs
