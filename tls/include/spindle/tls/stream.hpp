// TlsStream: a TLS connection over a net::TcpStream, with the stream's
// blocking-style calls: each parks only the calling fiber, takes a Timeout,
// and poisons its half after a failure.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string_view>

#include "spindle/base/result.hpp"
#include "spindle/net/stream.hpp"
#include "spindle/tls/context.hpp"

namespace spindle::tls {

namespace detail {
struct Session;
}

// Fiber-only (it may move between fibers and workers). Not thread-safe, with
// TcpStream's exception: the read half (read, read_exact, fill, peek,
// consume) and the write half (write_all, shutdown) are independent, so one
// fiber may read while another writes. They share OpenSSL's session under
// a lock held only around each OpenSSL call; what either half makes OpenSSL
// send (the reader's reply to a key update, say) goes out in order under the
// write half's lock, which a write holds while its bytes are sent.
//
// OpenSSL never touches the socket: it reads ciphertext from the TcpStream's
// read buffer and writes it into memory, and the stream moves those bytes
// with the TcpStream's own calls. So every wait is a TcpStream wait on the
// worker's I/O backend, no OpenSSL call blocks a worker, and the deadline,
// abort and poisoning rules are TcpStream's:
// - every call takes a Timeout (default: Config::read_write_timeout; for the
//   handshake, Config::connect_timeout) covering the whole call;
// - errc::timed_out and errc::aborted as TcpStream returns them;
// - a failed read poisons the read half, a failed write the write half
//   (later calls: errc::closed); a TLS error (a bad record, an alert from
//   the peer) ends the session, and poisons both.
// End of stream: read() and fill() return 0 once the peer's close_notify
// has arrived; an end of the TCP stream without one is errc::truncated.
//
// The stream keeps the plaintext of the last record read in a buffer of its
// own (one record, 16 KiB, allocated when a read first needs it);
// peek/fill/consume expose it, as TcpStream's do for its bytes.
class TlsStream {
 public:
  // Not connected: every call fails with errc::closed.
  TlsStream() noexcept;
  TlsStream(TlsStream&& o) noexcept;
  TlsStream& operator=(TlsStream&& o) noexcept;
  ~TlsStream();

  // The client's handshake over the connected `stream`, sending `host_name`
  // as SNI (unless it is an IP address) and, when `context` verifies the
  // peer (a client's default), refusing a certificate not valid for
  // `host_name` (a name, or an IP address literal). On success the
  // TlsStream owns the socket (`stream` is left empty); on failure `stream`
  // is left as it was, for the caller to close. Errors: verify_category()
  // (hostname mismatch, expired, unknown CA, ...), openssl_category() (an
  // alert from the server, a protocol error), errc::closed_in_handshake,
  // errc::no_host_name, and TcpStream's (timed_out, aborted, errno).
  // Suspends: until the handshake completes, fails or times out.
  static Result<TlsStream> connect(const Context& context, net::TcpStream&& stream,
                                   std::string_view host_name, net::Timeout timeout = {});

  // The server's handshake over the accepted `stream`, as connect() (a
  // client certificate is required and verified only when `context` says so).
  // Suspends: until the handshake completes, fails or times out.
  static Result<TlsStream> accept(const Context& context, net::TcpStream&& stream,
                                  net::Timeout timeout = {});

  // At least one byte and at most buf.size() of plaintext: from the buffer
  // if it holds any, else from the next record (as many RECVs as it takes).
  // Returns 0 after the peer's close_notify, or if `buf` is empty.
  // Suspends: until a record arrives, end of stream, an error, the timeout or an abort.
  Result<std::size_t> read(std::span<std::byte> buf, net::Timeout timeout = {});
  Result<std::size_t> read(std::span<char> buf, net::Timeout timeout = {});

  // Exactly buf.size() bytes under one timeout; end of stream first is errc::closed.
  // Suspends: until done, end of stream, an error, the timeout or an abort.
  Result<void> read_exact(std::span<std::byte> buf, net::Timeout timeout = {});
  Result<void> read_exact(std::span<char> buf, net::Timeout timeout = {});

  // The buffered plaintext not yet consumed, at most `max` bytes. No I/O.
  std::span<const std::byte> peek(std::size_t max = SIZE_MAX) const noexcept;
  // Drops the first `n` buffered bytes (n <= peek().size()).
  void consume(std::size_t n) noexcept;
  // Appends the plaintext of the next record to the buffer (moving the
  // buffered bytes to its front first). Returns how many bytes arrived: 0
  // after the peer's close_notify. std::errc::no_buffer_space (not
  // poisoning) if the buffer has no room for a record.
  // Suspends: until a record arrives, end of stream, an error, the timeout or an abort.
  Result<std::size_t> fill(net::Timeout timeout = {});

  // Encrypts and sends every byte under one timeout.
  // Suspends: until all records are with the kernel, an error, the timeout or an abort.
  Result<void> write_all(std::span<const std::byte> buf, net::Timeout timeout = {});
  Result<void> write_all(std::string_view buf, net::Timeout timeout = {});

  // kWrite (or kBoth): sends close_notify, then shuts the TCP write side
  // down (FIN); reads go on until the peer's close_notify. kRead: as
  // TcpStream's (later reads see end of stream, errc::truncated).
  // Suspends: while the close_notify is sent.
  Result<void> shutdown(net::Shutdown how, net::Timeout timeout = {});

  Result<net::SocketAddress> local_addr() const;
  Result<net::SocketAddress> peer_addr() const;

  bool is_open() const noexcept;
  int native_handle() const noexcept;

  // Whether the records this stream sends are encrypted by the kernel
  // (kernel TLS offload, docs/tls.md). What it receives is decrypted in user
  // space either way.
  bool kernel_offload() const noexcept;
  // The protocol ALPN chose, or empty.
  std::string_view alpn() const noexcept;
  // The host name the client sent as SNI (on either side), or empty.
  std::string_view server_name() const noexcept;
  // "TLSv1.3", "TLSv1.2"; empty when not connected.
  std::string_view version() const noexcept;

  // Closes the socket now, without close_notify (shutdown(kWrite) sends it).
  void close() noexcept;

  // Ends the session without close_notify and returns the TCP stream, for
  // a caller that must close the socket itself (its read buffer may hold
  // ciphertext). The TlsStream is left empty.
  net::TcpStream into_tcp() && noexcept;

 private:
  explicit TlsStream(std::unique_ptr<detail::Session> session) noexcept;
  static Result<TlsStream> handshake(const Context& context, net::TcpStream&& stream,
                                     std::string_view host_name, net::Timeout timeout);

  std::unique_ptr<detail::Session> session_;
};

}  // namespace spindle::tls
