// StreamSocket: a connected stream socket (TCP or Unix) with blocking-style
// calls that park the calling fiber, a read buffer, per-call timeouts, and
// poisoning after errors. TcpStream and UnixStream are its two kinds; code
// that only reads and writes can take a StreamSocket& and serve both.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "spindle/base/result.hpp"
#include "spindle/base/unique_fd.hpp"
#include "spindle/net/address.hpp"
#include "spindle/net/received.hpp"
#include "spindle/net/socket.hpp"
#include "spindle/net/timeout.hpp"
#include "spindle/sched/pooled_buffer.hpp"

namespace spindle {
struct IoOptions;
}

namespace spindle::net {

enum class Shutdown : int { kRead = SHUT_RD, kWrite = SHUT_WR, kBoth = SHUT_RDWR };

// Fiber-only (its blocking calls need a fiber; it may move between fibers
// and workers). Not thread-safe, with one exception: the read half (read,
// read_exact, fill, peek, consume) and the write half (write_all, writev) are
// independent, so one fiber may read while another writes. shutdown() and the
// address calls may be used from any fiber while the stream is open.
// The calls marked `Suspends:` park the calling fiber; the others (peek,
// consume, shutdown, the address and option calls, close) are plain syscalls
// or buffer operations and never suspend.
//
// Every read and write is one operation of spindle::io (recv, send, sendmsg,
// recvmsg) on the calling worker's backend, with a deadline from its Timeout
// (default: Config's read_write_timeout). A failed call — an error, a
// timeout, an abort — poisons its half: the kernel may have moved part of
// the bytes, so later calls on that half return errc::closed without
// touching the socket. End of stream is not an error for read() (it returns
// 0), but is for read_exact() (errc::closed).
//
// The stream owns a read buffer of Config::read_buffer_size bytes (allocated
// when a read first needs it): small reads are served from it, reads at least
// as large as it go straight to the caller's memory, and so do reads of a
// page (4 KiB) or more while the socket is being drained by them (the last
// receive returned less than it asked for, as with requests and replies); a
// receive that fills the caller's memory sends the next reads through the
// buffer until one drains the socket again. peek/fill/consume expose it, so a
// parser can work on the buffered bytes in place.
class StreamSocket : public Socket {
 public:
  // Reads at least one byte and at most buf.size(): from the buffer if it
  // holds any, else with one receive. Returns 0 at end of stream (the peer
  // shut down its write side) or if `buf` is empty.
  // Suspends: until bytes arrive, end of stream, an error, the timeout or an abort.
  Result<std::size_t> read(std::span<std::byte> buf, Timeout timeout = {});
  Result<std::size_t> read(std::span<char> buf, Timeout timeout = {});

  // Reads at least one byte and at most io::kPooledBufferSize into a buffer
  // of the worker's receive pool, which the backend takes only when bytes
  // arrive (io::recv_pooled): a connection waiting this way for its next
  // request holds no read buffer. Bytes already buffered come first, in a
  // buffer of their own. Empty at end of stream.
  // Suspends: until bytes arrive, end of stream, an error, the timeout or an abort.
  Result<io::PooledBuffer> read_pooled(Timeout timeout = {});

  // Reads exactly buf.size() bytes, across as many receives as needed, under
  // one timeout. End of stream first is errc::closed.
  // Suspends: until done, end of stream, an error, the timeout or an abort.
  Result<void> read_exact(std::span<std::byte> buf, Timeout timeout = {});
  Result<void> read_exact(std::span<char> buf, Timeout timeout = {});

  // The buffered bytes not yet consumed, at most `max` of them. No I/O.
  std::span<const std::byte> peek(std::size_t max = SIZE_MAX) const noexcept;
  // Drops the first `n` buffered bytes (n <= peek().size()).
  void consume(std::size_t n) noexcept;
  // One receive that appends to the buffer (moving the buffered bytes to its
  // front first if that makes room). Returns how many bytes arrived: 0 at
  // end of stream. std::errc::no_buffer_space (not poisoning) if the buffer
  // is already full of unconsumed bytes.
  // Suspends: until bytes arrive, end of stream, an error, the timeout or an abort.
  Result<std::size_t> fill(Timeout timeout = {});

  // Sends every byte (send with MSG_NOSIGNAL, repeated after partial sends)
  // under one timeout. A peer that went away gives EPIPE or ECONNRESET.
  // Suspends: until all bytes are with the kernel, an error, the timeout or an abort.
  Result<void> write_all(std::span<const std::byte> buf, Timeout timeout = {});
  Result<void> write_all(std::string_view buf, Timeout timeout = {});

  // write_all of the concatenation of `bufs`, with sendmsg (up to 64
  // buffers per operation).
  // Suspends: as write_all.
  Result<void> writev(std::span<const iovec> bufs, Timeout timeout = {});

  // shutdown(2): kRead makes this stream's pending and later reads see end
  // of stream once the buffered data is read; kWrite sends FIN (Unix: end of
  // stream) after the bytes already written. Any fiber, while the stream is
  // open.
  Result<void> shutdown(Shutdown how) noexcept;

  // The peer's address as the connect or accept saw it (unnamed for most
  // Unix peers: a connecting Unix socket is seldom bound).
  Result<SocketAddress> peer_addr() const;

 protected:
  StreamSocket() noexcept = default;
  StreamSocket(UniqueFd fd, const SocketAddress& peer) noexcept;
  StreamSocket(StreamSocket&& o) noexcept;
  StreamSocket& operator=(StreamSocket&& o) noexcept;
  ~StreamSocket() = default;

  // For UnixStream: write_all of `data` (not empty) with `fds` (at most
  // kMaxPassedFds) attached to its first bytes, and a read that also takes
  // the descriptors that come with the bytes (see UnixStream).
  Result<void> send_with_fds(std::span<const std::byte> data, std::span<const int> fds,
                             Timeout timeout);
  Result<Received> recv_with_fds(std::span<std::byte> buf, std::size_t max_fds, Timeout timeout);

 private:
  // `limit` is the whole call's (see IoOptions::call_limit).
  Result<std::size_t> read_some(std::byte* out, std::size_t len, Timeout::Limit& limit);
  Result<std::size_t> recv_into(std::byte* out, std::size_t len, Timeout::Limit& limit);
  // The options of the next receive, with the turn-taking hint (drained_).
  IoOptions next_receive(Timeout::Limit& limit) noexcept;
  // After a receive of `n` bytes into room for `room`.
  void received(std::size_t n, std::size_t room) noexcept;
  // Copies up to `len` buffered bytes to `out` and consumes them.
  std::size_t take_buffered(std::byte* out, std::size_t len) noexcept;
  void ensure_buffer();
  Result<void> send_all(const std::byte* data, std::size_t len, Timeout::Limit& limit);
  // The result of a send: counts it, or poisons the write half (a send of
  // nothing is errc::closed).
  Result<std::size_t> sent(const Result<std::size_t>& r);

  SocketAddress peer_;
  // The read buffer: bytes [pos_, end_) of buf_ are buffered, cap_ its size.
  // Invariant: pos_ <= end_ <= cap_; all zero until the first read.
  std::unique_ptr<std::byte[]> buf_;
  std::size_t cap_ = 0;
  std::size_t pos_ = 0;
  std::size_t end_ = 0;
  bool read_poisoned_ = false;   // read half only
  bool write_poisoned_ = false;  // write half only
  // The peer's turn: the last receive left the socket drained (or there was
  // none yet; read half only), and bytes were sent since (set by the write
  // half, cleared by the read half; relaxed: it is only a hint). Then the
  // next receive arms poll first instead of trying one that would find
  // nothing.
  bool drained_ = true;
  std::atomic<bool> sent_{false};
};

}  // namespace spindle::net
