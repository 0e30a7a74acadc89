// TcpStream: reads and writes as io::recv/send/sendmsg on the calling
// worker's I/O backend, so each call parks only its fiber, and a timeout or
// abort cancels the operation and waits for the cancellation to be confirmed
// before the call returns (the kernel never writes into a buffer after its
// call returned).
//
// Poisoning follows the reference: a read or write that fails may have moved
// part of its bytes (a partial send before the timeout, buffered bytes
// consumed by a read_exact that then fails), so the stream's framing is lost
// and later calls on that half say errc::closed instead of guessing.

#include "spindle/net/stream.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <utility>

#include "counters.hpp"
#include "socket_ops.hpp"
#include "spindle/sched/io.hpp"

namespace spindle::net {
namespace {

// One operation moves at most this much (io::recv and io::send cap there);
// longer calls loop.
constexpr std::size_t kMaxOpBytes = std::size_t{1} << 30;
// iovecs per sendmsg; longer writev calls loop.
constexpr std::size_t kIovBatch = 64;
// A read into at least this much of the caller's memory skips the stream's
// buffer while the socket is being drained (see read_some).
constexpr std::size_t kDirectRead = 4096;

std::span<std::byte> bytes(std::span<char> s) noexcept {
  return {reinterpret_cast<std::byte*>(s.data()), s.size()};
}

}  // namespace

TcpStream::TcpStream(UniqueFd fd, const SocketAddress& peer) noexcept
    : fd_(std::move(fd)), fd_id_(io::new_fd_id()), peer_(peer) {}

TcpStream::TcpStream(TcpStream&& o) noexcept
    : fd_(std::move(o.fd_)),
      fd_id_(std::exchange(o.fd_id_, 0)),
      peer_(o.peer_),
      buf_(std::move(o.buf_)),
      cap_(std::exchange(o.cap_, 0)),
      pos_(std::exchange(o.pos_, 0)),
      end_(std::exchange(o.end_, 0)),
      read_poisoned_(std::exchange(o.read_poisoned_, false)),
      write_poisoned_(std::exchange(o.write_poisoned_, false)),
      drained_(std::exchange(o.drained_, false)),
      sent_(o.sent_.exchange(false, std::memory_order_relaxed)) {}

TcpStream& TcpStream::operator=(TcpStream&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = std::move(o.fd_);
    fd_id_ = std::exchange(o.fd_id_, 0);
    peer_ = o.peer_;
    buf_ = std::move(o.buf_);
    cap_ = std::exchange(o.cap_, 0);
    pos_ = std::exchange(o.pos_, 0);
    end_ = std::exchange(o.end_, 0);
    read_poisoned_ = std::exchange(o.read_poisoned_, false);
    write_poisoned_ = std::exchange(o.write_poisoned_, false);
    drained_ = std::exchange(o.drained_, false);
    sent_.store(o.sent_.exchange(false, std::memory_order_relaxed), std::memory_order_relaxed);
  }
  return *this;
}

TcpStream::~TcpStream() { close(); }

void TcpStream::close() noexcept {
  fd_.reset();
  buf_.reset();
  cap_ = pos_ = end_ = 0;
}

Result<TcpStream> TcpStream::connect(const SocketAddress& peer, Timeout timeout) {
  const Config& config = current_config();
  const Deadline deadline = timeout.deadline(config.connect_timeout);
  UniqueFd fd(::socket(peer.family(), SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP));
  if (!fd) return errno_failure(errno);
  if (auto r = io::connect(fd.get(), peer.data(), peer.size(), {.deadline = deadline}); !r)
    return failure(r.error());
  detail::kOutboundConnections.add();
  detail::apply_stream_options(fd.get(), config);
  return TcpStream(std::move(fd), peer);
}

void TcpStream::ensure_buffer() {
  if (buf_) return;
  cap_ = current_config().read_buffer_size;
  buf_ = std::make_unique_for_overwrite<std::byte[]>(cap_);
  pos_ = end_ = 0;
}

Result<std::size_t> TcpStream::recv_into(std::byte* out, std::size_t len, Deadline deadline) {
  len = std::min(len, kMaxOpBytes);
  // Turn-taking (a request read whole, its reply sent): the peer has not
  // answered yet, so skip the receive attempt that would find nothing.
  const bool expect_wait = drained_ && sent_.load(std::memory_order_relaxed);
  sent_.store(false, std::memory_order_relaxed);
  auto r = io::recv(fd_.get(), {out, len}, 0,
                    {.deadline = deadline, .expect_wait = expect_wait, .fd_id = fd_id_});
  if (!r) {
    read_poisoned_ = true;
    return failure(r.error());
  }
  drained_ = *r < len;
  detail::kInboundBandwidth.add(*r);
  return *r;
}

Result<std::size_t> TcpStream::read_some(std::byte* out, std::size_t len, Deadline deadline) {
  // Straight into the caller's memory when it is as large as the buffer, or a
  // page or more while the last receive drained the socket (a message at a
  // time, as requests and replies come: the copy and the buffer's memory buy
  // nothing). A receive that fills the caller's memory means more is waiting:
  // then the buffer takes up to its size in one RECV.
  const std::size_t cap = buf_ ? cap_ : current_config().read_buffer_size;
  if (len >= cap || (len >= kDirectRead && drained_)) return recv_into(out, len, deadline);
  ensure_buffer();
  pos_ = end_ = 0;
  auto r = recv_into(buf_.get(), cap_, deadline);
  if (!r || *r == 0) return r;
  end_ = *r;
  const std::size_t n = std::min(len, end_);
  std::memcpy(out, buf_.get(), n);
  pos_ = n;
  return n;
}

Result<std::size_t> TcpStream::read(std::span<std::byte> buf, Timeout timeout) {
  if (!fd_ || read_poisoned_) return failure(errc::closed);
  if (buf.empty()) return 0;
  if (pos_ < end_) {
    const std::size_t n = std::min(buf.size(), end_ - pos_);
    std::memcpy(buf.data(), buf_.get() + pos_, n);
    consume(n);
    return n;
  }
  return read_some(buf.data(), buf.size(), detail::read_write_deadline(timeout));
}

Result<std::size_t> TcpStream::read(std::span<char> buf, Timeout timeout) {
  return read(bytes(buf), timeout);
}

Result<void> TcpStream::read_exact(std::span<std::byte> buf, Timeout timeout) {
  if (!fd_ || read_poisoned_) return failure(errc::closed);
  std::size_t done = 0;
  Deadline deadline{};
  bool have_deadline = false;
  while (done < buf.size()) {
    if (pos_ < end_) {
      const std::size_t n = std::min(buf.size() - done, end_ - pos_);
      std::memcpy(buf.data() + done, buf_.get() + pos_, n);
      consume(n);
      done += n;
      continue;
    }
    if (!have_deadline) {
      deadline = detail::read_write_deadline(timeout);
      have_deadline = true;
    }
    auto r = read_some(buf.data() + done, buf.size() - done, deadline);
    if (!r) return failure(r.error());
    if (*r == 0) {
      read_poisoned_ = true;  // part of the message may be gone already
      return failure(errc::closed);
    }
    done += *r;
  }
  return {};
}

Result<void> TcpStream::read_exact(std::span<char> buf, Timeout timeout) {
  return read_exact(bytes(buf), timeout);
}

std::span<const std::byte> TcpStream::peek(std::size_t max) const noexcept {
  if (!buf_) return {};
  return {buf_.get() + pos_, std::min(max, end_ - pos_)};
}

void TcpStream::consume(std::size_t n) noexcept {
  pos_ += std::min(n, end_ - pos_);
  if (pos_ == end_) pos_ = end_ = 0;
}

Result<std::size_t> TcpStream::fill(Timeout timeout) {
  if (!fd_ || read_poisoned_) return failure(errc::closed);
  ensure_buffer();
  if (end_ == cap_) {
    if (pos_ == 0) return errno_failure(ENOBUFS);
    std::memmove(buf_.get(), buf_.get() + pos_, end_ - pos_);
    end_ -= pos_;
    pos_ = 0;
  }
  auto r = recv_into(buf_.get() + end_, cap_ - end_, detail::read_write_deadline(timeout));
  if (r) end_ += *r;
  return r;
}

Result<void> TcpStream::send_all(const std::byte* data, std::size_t len, Deadline deadline) {
  std::size_t done = 0;
  const int fd = fd_.get();
  while (done < len) {
    const std::size_t n = std::min(len - done, kMaxOpBytes);
    auto r = io::send(fd, {data + done, n}, MSG_NOSIGNAL, {.deadline = deadline, .fd_id = fd_id_});
    if (!r || *r == 0) {
      write_poisoned_ = true;
      return failure(r ? make_error_code(errc::closed) : r.error());
    }
    detail::kOutboundBandwidth.add(*r);
    done += *r;
  }
  sent_.store(true, std::memory_order_relaxed);
  return {};
}

Result<void> TcpStream::write_all(std::span<const std::byte> buf, Timeout timeout) {
  if (!fd_ || write_poisoned_) return failure(errc::closed);
  if (buf.empty()) return {};
  return send_all(buf.data(), buf.size(), detail::read_write_deadline(timeout));
}

Result<void> TcpStream::write_all(std::string_view buf, Timeout timeout) {
  return write_all(std::as_bytes(std::span(buf.data(), buf.size())), timeout);
}

Result<void> TcpStream::writev(std::span<const iovec> bufs, Timeout timeout) {
  if (!fd_ || write_poisoned_) return failure(errc::closed);
  std::size_t index = 0;   // the first buffer not fully sent
  std::size_t offset = 0;  // bytes of bufs[index] already sent
  auto skip_empty = [&] {
    while (index < bufs.size() && offset == bufs[index].iov_len) {
      ++index;
      offset = 0;
    }
  };
  skip_empty();
  if (index == bufs.size()) return {};
  if (bufs.size() - index == 1) {
    return send_all(static_cast<const std::byte*>(bufs[index].iov_base) + offset,
                    bufs[index].iov_len - offset, detail::read_write_deadline(timeout));
  }
  const Deadline deadline = detail::read_write_deadline(timeout);
  const int fd = fd_.get();
  std::array<iovec, kIovBatch> scratch;
  while (index < bufs.size()) {
    std::size_t count = 0;
    for (std::size_t i = index; i < bufs.size() && count < kIovBatch; ++i) {
      const std::size_t skip = i == index ? offset : 0;
      if (bufs[i].iov_len == skip) continue;
      scratch[count++] = iovec{static_cast<char*>(bufs[i].iov_base) + skip, bufs[i].iov_len - skip};
    }
    msghdr msg{};
    msg.msg_iov = scratch.data();
    msg.msg_iovlen = count;
    auto r = io::sendmsg(fd, msg, MSG_NOSIGNAL, {.deadline = deadline, .fd_id = fd_id_});
    if (!r || *r == 0) {
      write_poisoned_ = true;
      return failure(r ? make_error_code(errc::closed) : r.error());
    }
    // Advance past the bytes sent.
    std::size_t sent = *r;
    detail::kOutboundBandwidth.add(sent);
    while (sent > 0) {
      const std::size_t left = bufs[index].iov_len - offset;
      if (sent < left) {
        offset += sent;
        break;
      }
      sent -= left;
      ++index;
      offset = 0;
      skip_empty();
    }
    skip_empty();
  }
  sent_.store(true, std::memory_order_relaxed);
  return {};
}

Result<void> TcpStream::shutdown(Shutdown how) noexcept {
  if (!fd_) return failure(errc::closed);
  if (::shutdown(fd_.get(), static_cast<int>(how)) != 0) return errno_failure(errno);
  return {};
}

Result<SocketAddress> TcpStream::local_addr() const {
  if (!fd_) return failure(errc::closed);
  return detail::local_address(fd_.get());
}

Result<SocketAddress> TcpStream::peer_addr() const {
  if (!fd_) return failure(errc::closed);
  return peer_;
}

Result<void> TcpStream::set_nodelay(bool on) noexcept {
  if (!fd_) return failure(errc::closed);
  const int v = on ? 1 : 0;
  if (::setsockopt(fd_.get(), IPPROTO_TCP, TCP_NODELAY, &v, sizeof v) != 0)
    return errno_failure(errno);
  return {};
}

}  // namespace spindle::net
