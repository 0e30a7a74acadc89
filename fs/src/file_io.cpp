// File's transfers: reads and writes at the position or an offset, their
// vectored forms, and the loops over short transfers.
#include <cerrno>

#include "io_options.hpp"
#include "spindle/fs/file.hpp"

namespace spindle::fs {
namespace {

constexpr std::uint64_t kPosition = io::kStreamOffset;

iovec one(std::span<const std::byte> buf) noexcept {
  return {const_cast<std::byte*>(buf.data()), buf.size()};
}

std::span<const std::byte> bytes(std::string_view s) noexcept {
  return std::as_bytes(std::span(s.data(), s.size()));
}

}  // namespace

Result<std::size_t> File::read(std::span<std::byte> buf) { return pread(buf, kPosition); }

Result<std::size_t> File::pread(std::span<std::byte> buf, std::uint64_t offset) {
  auto n = io::read(fd_.get(), buf, offset);
  if (!n) return fail(n.error(), "read");
  return *n;
}

Result<std::size_t> File::readv(std::span<const iovec> iov) { return preadv(iov, kPosition); }

Result<std::size_t> File::preadv(std::span<const iovec> iov, std::uint64_t offset) {
  auto n = io::readv(fd_.get(), iov, offset);
  if (!n) return fail(n.error(), "read");
  return *n;
}

Result<void> File::read_exact(std::span<std::byte> buf) { return read_all_at(buf, kPosition); }

Result<void> File::pread_exact(std::span<std::byte> buf, std::uint64_t offset) {
  return read_all_at(buf, offset);
}

Result<void> File::read_all_at(std::span<std::byte> buf, std::uint64_t offset) {
  while (!buf.empty()) {
    auto n = io::read(fd_.get(), buf, offset);
    if (!n) return fail(n.error(), "read");
    if (*n == 0) return fail(make_error_code(errc::unexpected_eof), "read");
    buf = buf.subspan(*n);
    if (offset != kPosition) offset += *n;
  }
  return {};
}

Result<std::size_t> File::write(std::span<const std::byte> buf) { return pwrite(buf, kPosition); }

Result<std::size_t> File::pwrite(std::span<const std::byte> buf, std::uint64_t offset) {
  const iovec v = one(buf);
  return pwritev(std::span(&v, 1), offset);
}

Result<std::size_t> File::writev(std::span<const iovec> iov) { return pwritev(iov, kPosition); }

Result<std::size_t> File::pwritev(std::span<const iovec> iov, std::uint64_t offset) {
  auto n = io::write(fd_.get(), iov, offset, 0, detail::kNeverCancel);
  if (!n) return fail(n.error(), "write");
  return *n;
}

Result<void> File::write_all(std::span<const std::byte> buf) {
  return write_all_at(buf, kPosition);
}

Result<void> File::write_all(std::string_view buf) { return write_all_at(bytes(buf), kPosition); }

Result<void> File::pwrite_all(std::span<const std::byte> buf, std::uint64_t offset) {
  return write_all_at(buf, offset);
}

Result<void> File::pwrite_all(std::string_view buf, std::uint64_t offset) {
  return write_all_at(bytes(buf), offset);
}

Result<void> File::write_all_at(std::span<const std::byte> buf, std::uint64_t offset) {
  while (!buf.empty()) {
    const iovec v = one(buf);
    auto n = io::write(fd_.get(), std::span(&v, 1), offset, 0, detail::kNeverCancel);
    if (!n) return fail(n.error(), "write");
    // A write that takes nothing would loop forever.
    if (*n == 0) return fail(std::make_error_code(std::errc::io_error), "write");
    buf = buf.subspan(*n);
    if (offset != kPosition) offset += *n;
  }
  return {};
}

}  // namespace spindle::fs
