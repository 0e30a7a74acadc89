// StreamSocket: reads and writes as io::recv/send/sendmsg/recvmsg on the
// calling worker's I/O backend, so each call parks only its fiber, and a
// timeout or abort cancels the operation and waits for the cancellation to
// be confirmed before the call returns (the kernel never writes into a
// buffer after its call returned).
//
// Poisoning follows the reference: a read or write that fails may have moved
// part of its bytes (a partial send before the timeout, buffered bytes
// consumed by a read_exact that then fails), so the stream's framing is lost
// and later calls on that half say errc::closed instead of guessing.

#include "spindle/net/stream_socket.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "counters.hpp"
#include "message.hpp"
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

}  // namespace

StreamSocket::StreamSocket(UniqueFd fd, const SocketAddress& peer) noexcept
    : Socket(std::move(fd)), peer_(peer) {}

StreamSocket::StreamSocket(StreamSocket&& o) noexcept
    : Socket(std::move(o)),
      peer_(o.peer_),
      buf_(std::move(o.buf_)),
      cap_(std::exchange(o.cap_, 0)),
      pos_(std::exchange(o.pos_, 0)),
      end_(std::exchange(o.end_, 0)),
      read_poisoned_(std::exchange(o.read_poisoned_, false)),
      write_poisoned_(std::exchange(o.write_poisoned_, false)),
      drained_(std::exchange(o.drained_, false)),
      sent_(o.sent_.exchange(false, std::memory_order_relaxed)) {}

StreamSocket& StreamSocket::operator=(StreamSocket&& o) noexcept {
  if (this != &o) {
    Socket::operator=(std::move(o));
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

void StreamSocket::ensure_buffer() {
  if (buf_) return;
  cap_ = current_config().read_buffer_size;
  buf_ = std::make_unique_for_overwrite<std::byte[]>(cap_);
  pos_ = end_ = 0;
}

IoOptions StreamSocket::next_receive(Timeout::Limit& limit) noexcept {
  // Turn-taking (a request read whole, its reply sent): the peer has not
  // answered yet, so skip the receive attempt that would find nothing.
  const bool expect_wait = drained_ && sent_.load(std::memory_order_relaxed);
  sent_.store(false, std::memory_order_relaxed);
  IoOptions o = detail::call_options(limit, fd_id_);
  o.expect_wait = expect_wait;
  return o;
}

void StreamSocket::received(std::size_t n, std::size_t room) noexcept {
  drained_ = n < room;
  detail::kInboundBandwidth.add(n);
}

Result<std::size_t> StreamSocket::recv_into(std::byte* out, std::size_t len,
                                            Timeout::Limit& limit) {
  len = std::min(len, kMaxOpBytes);
  auto r = io::recv(fd_.get(), {out, len}, 0, next_receive(limit));
  if (!r) {
    read_poisoned_ = true;
    return failure(r.error());
  }
  received(*r, len);
  return *r;
}

Result<std::size_t> StreamSocket::read_some(std::byte* out, std::size_t len,
                                            Timeout::Limit& limit) {
  // Straight into the caller's memory when it is as large as the buffer, or a
  // page or more while the last receive drained the socket (a message at a
  // time, as requests and replies come: the copy and the buffer's memory buy
  // nothing). A receive that fills the caller's memory means more is waiting:
  // then the buffer takes up to its size in one RECV.
  const std::size_t cap = buf_ ? cap_ : current_config().read_buffer_size;
  if (len >= cap || (len >= kDirectRead && drained_)) return recv_into(out, len, limit);
  ensure_buffer();
  pos_ = end_ = 0;
  auto r = recv_into(buf_.get(), cap_, limit);
  if (!r || *r == 0) return r;
  end_ = *r;
  const std::size_t n = std::min(len, end_);
  std::memcpy(out, buf_.get(), n);
  pos_ = n;
  return n;
}

Result<std::size_t> StreamSocket::read(std::span<std::byte> buf, Timeout timeout) {
  if (!fd_ || read_poisoned_) return failure(errc::closed);
  if (buf.empty()) return 0;
  if (pos_ < end_) return take_buffered(buf.data(), buf.size());
  auto limit = detail::read_write_limit(timeout);
  return read_some(buf.data(), buf.size(), limit);
}

Result<std::size_t> StreamSocket::read(std::span<char> buf, Timeout timeout) {
  return read(detail::bytes(buf), timeout);
}

Result<io::PooledBuffer> StreamSocket::read_pooled(Timeout timeout) {
  if (!fd_ || read_poisoned_) return failure(errc::closed);
  if (pos_ < end_) {
    const std::size_t n = std::min(end_ - pos_, io::kPooledBufferSize);
    auto held = io::PooledBuffer::copy_of({buf_.get() + pos_, n});
    pos_ += n;
    return held;
  }
  auto limit = detail::read_write_limit(timeout);
  auto r = io::recv_pooled(fd_.get(), 0, next_receive(limit));
  if (!r) {
    read_poisoned_ = true;
    return failure(r.error());
  }
  received(r->size(), io::kPooledBufferSize);
  return r;
}

Result<void> StreamSocket::read_exact(std::span<std::byte> buf, Timeout timeout) {
  if (!fd_ || read_poisoned_) return failure(errc::closed);
  std::size_t done = 0;
  auto limit = detail::read_write_limit(timeout);
  while (done < buf.size()) {
    if (pos_ < end_) {
      done += take_buffered(buf.data() + done, buf.size() - done);
      continue;
    }
    auto r = read_some(buf.data() + done, buf.size() - done, limit);
    if (!r) return failure(r.error());
    if (*r == 0) {
      read_poisoned_ = true;  // part of the message may be gone already
      return failure(errc::closed);
    }
    done += *r;
  }
  return {};
}

Result<void> StreamSocket::read_exact(std::span<char> buf, Timeout timeout) {
  return read_exact(detail::bytes(buf), timeout);
}

std::size_t StreamSocket::take_buffered(std::byte* out, std::size_t len) noexcept {
  const std::size_t n = std::min(len, end_ - pos_);
  std::memcpy(out, buf_.get() + pos_, n);
  consume(n);
  return n;
}

std::span<const std::byte> StreamSocket::peek(std::size_t max) const noexcept {
  if (!buf_ || !fd_) return {};
  return {buf_.get() + pos_, std::min(max, end_ - pos_)};
}

void StreamSocket::consume(std::size_t n) noexcept {
  pos_ += std::min(n, end_ - pos_);
  if (pos_ == end_) pos_ = end_ = 0;
}

Result<std::size_t> StreamSocket::fill(Timeout timeout) {
  if (!fd_ || read_poisoned_) return failure(errc::closed);
  ensure_buffer();
  if (end_ == cap_) {
    if (pos_ == 0) return errno_failure(ENOBUFS);
    std::memmove(buf_.get(), buf_.get() + pos_, end_ - pos_);
    end_ -= pos_;
    pos_ = 0;
  }
  auto limit = detail::read_write_limit(timeout);
  auto r = recv_into(buf_.get() + end_, cap_ - end_, limit);
  if (r) end_ += *r;
  return r;
}

Result<void> StreamSocket::send_all(const std::byte* data, std::size_t len, Timeout::Limit& limit) {
  std::size_t done = 0;
  const int fd = fd_.get();
  while (done < len) {
    const std::size_t n = std::min(len - done, kMaxOpBytes);
    auto r =
        sent(io::send(fd, {data + done, n}, MSG_NOSIGNAL, detail::call_options(limit, fd_id_)));
    if (!r) return failure(r.error());
    done += *r;
  }
  sent_.store(true, std::memory_order_relaxed);
  return {};
}

Result<std::size_t> StreamSocket::sent(const Result<std::size_t>& r) {
  if (!r || *r == 0) {
    write_poisoned_ = true;
    return failure(r ? make_error_code(errc::closed) : r.error());
  }
  detail::kOutboundBandwidth.add(*r);
  return *r;
}

Result<void> StreamSocket::write_all(std::span<const std::byte> buf, Timeout timeout) {
  if (!fd_ || write_poisoned_) return failure(errc::closed);
  if (buf.empty()) return {};
  auto limit = detail::read_write_limit(timeout);
  return send_all(buf.data(), buf.size(), limit);
}

Result<void> StreamSocket::write_all(std::string_view buf, Timeout timeout) {
  return write_all(std::as_bytes(std::span(buf.data(), buf.size())), timeout);
}

Result<void> StreamSocket::writev(std::span<const iovec> bufs, Timeout timeout) {
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
  auto limit = detail::read_write_limit(timeout);
  if (bufs.size() - index == 1) {
    return send_all(static_cast<const std::byte*>(bufs[index].iov_base) + offset,
                    bufs[index].iov_len - offset, limit);
  }
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
    auto r = sent(io::sendmsg(fd, msg, MSG_NOSIGNAL, detail::call_options(limit, fd_id_)));
    if (!r) return failure(r.error());
    // Advance past the bytes sent.
    std::size_t moved = *r;
    while (moved > 0) {
      const std::size_t left = bufs[index].iov_len - offset;
      if (moved < left) {
        offset += moved;
        break;
      }
      moved -= left;
      ++index;
      offset = 0;
      skip_empty();
    }
    skip_empty();
  }
  sent_.store(true, std::memory_order_relaxed);
  return {};
}

Result<void> StreamSocket::shutdown(Shutdown how) noexcept {
  if (!fd_) return failure(errc::closed);
  if (::shutdown(fd_.get(), static_cast<int>(how)) != 0) return errno_failure(errno);
  return {};
}

Result<SocketAddress> StreamSocket::peer_addr() const {
  if (!fd_) return failure(errc::closed);
  return peer_;
}

Result<void> StreamSocket::send_with_fds(std::span<const std::byte> data, std::span<const int> fds,
                                         Timeout timeout) {
  if (data.empty()) {
    throw std::invalid_argument(
        "spindle::net::UnixStream::send_fds: data is empty (descriptors travel with bytes)");
  }
  detail::check_fd_count(fds, "UnixStream::send_fds");
  if (!fd_ || write_poisoned_) return failure(errc::closed);
  auto limit = detail::read_write_limit(timeout);
  auto r = sent(
      detail::send_message(fd_.get(), data, fds, nullptr, detail::call_options(limit, fd_id_)));
  if (!r) return failure(r.error());
  // The descriptors went with the first bytes; the rest follow without them.
  if (*r < data.size()) return send_all(data.data() + *r, data.size() - *r, limit);
  sent_.store(true, std::memory_order_relaxed);
  return {};
}

Result<Received> StreamSocket::recv_with_fds(std::span<std::byte> buf, std::size_t max_fds,
                                             Timeout timeout) {
  if (!fd_ || read_poisoned_) return failure(errc::closed);
  Received out;
  out.from = SocketAddress::unix_unnamed();
  if (buf.empty()) return out;
  if (pos_ < end_) {
    out.size = take_buffered(buf.data(), buf.size());
    return out;
  }
  sent_.store(false, std::memory_order_relaxed);
  auto limit = detail::read_write_limit(timeout);
  auto r = detail::receive_message(fd_.get(), buf, max_fds, detail::call_options(limit, fd_id_));
  if (!r) {
    read_poisoned_ = true;
    return failure(r.error());
  }
  drained_ = r->size < buf.size();
  detail::kInboundBandwidth.add(r->size);
  return r;
}

}  // namespace spindle::net
