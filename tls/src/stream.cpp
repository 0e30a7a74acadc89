// TlsStream: OpenSSL's session state machine driven by the TcpStream's
// blocking calls (transport.hpp says how the bytes move).
//
// Every OpenSSL call goes through Session::drive, one step at a time:
//   1. Show OpenSSL the TcpStream's buffered bytes (peek) and make the call.
//      It reads from that view and writes into memory, so it never waits.
//   2. Read the outcome and the thread's error queue at once: the fiber may
//      resume on another thread after any later step, and OpenSSL's queue is
//      per thread.
//   3. consume() what OpenSSL took; send what it wrote (a handshake flight,
//      an alert, a KeyUpdate) with the TcpStream's write_all, also after a
//      failure, so the peer learns why.
//   4. If OpenSSL wants more input, fill() the TcpStream (the only wait for
//      input) and go to 1; a TCP end of stream is shown to OpenSSL as end of
//      file.
// So a handshake, a read and a write each wait only in TcpStream calls, with
// their deadline and abort rules, and the worker runs other fibers meanwhile.
//
// Rejected: OpenSSL's socket BIO on a non-blocking socket (OpenSSL would do
// the socket I/O, outside the runtime's backends: no io_uring, no deadline
// wheel); a pair of memory BIOs (two copies of each ciphertext byte, where
// the TcpStream's buffer already holds the input).

#include "spindle/tls/stream.hpp"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <utility>

#include "context_state.hpp"
#include "kernel_offload.hpp"
#include "openssl_error.hpp"
#include "spindle/sched/runtime.hpp"
#include "spindle/tls/error.hpp"
#include "transport.hpp"

namespace spindle::tls {
namespace {

// The largest record's plaintext: the size of a stream's plaintext buffer.
constexpr std::size_t kRecordPlaintext = 16 * 1024;
// A write_all hands OpenSSL at most this much before its records go out, so a
// large write holds a few records' worth of ciphertext at a time.
constexpr std::size_t kWriteChunk = 4 * kRecordPlaintext;
// Ciphertext buffer capacity kept between writes; a larger one (after a large
// write) is given back, so an idle connection holds little.
constexpr std::size_t kKeptOutput = 4 * 1024;

std::span<std::byte> bytes(std::span<char> s) noexcept {
  return {reinterpret_cast<std::byte*>(s.data()), s.size()};
}

Deadline read_write_deadline(const net::Timeout& t) {
  return t.deadline(current_config().read_write_timeout);
}

// SNI and the name the server's certificate must carry.
Result<void> set_peer_name(SSL* ssl, std::string_view host_name, bool verify) {
  std::string name(host_name);
  if (name.size() > 2 && name.front() == '[' && name.back() == ']')
    name = name.substr(1, name.size() - 2);
  const bool ip = net::SocketAddress::parse_ip(name).has_value();
  // RFC 6066: SNI carries host names only, never address literals.
  if (!name.empty() && !ip) SSL_set_tlsext_host_name(ssl, name.c_str());
  if (!verify) return {};
  if (name.empty()) return failure(errc::no_host_name);
  const int set = ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str())
                     : SSL_set1_host(ssl, name.c_str());
  if (set != 1) {
    ERR_clear_error();
    return errno_failure(EINVAL);
  }
  return {};
}

}  // namespace

namespace detail {

// A connection's state. Heap-allocated so that the BIO's pointer to its
// transport stays valid while the TlsStream moves.
struct Session {
  enum class Outcome : unsigned char { kDone, kClosed };

  Session(const Context& c, net::TcpStream&& stream)
      : context(c), tcp(std::move(stream)), ssl(SSL_new(c.state().ctx)) {
    if (ssl == nullptr) throw std::bad_alloc();
    BIO* bio = transport.share_bio();
    SSL_set_bio(ssl, bio, bio);
  }
  ~Session() { SSL_free(ssl); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Runs `op` (an OpenSSL call returning its int result) to completion: the
  // steps at the top of this file. `eof`: the error for a TCP end of stream
  // without close_notify. Poisons what a failure breaks: a TLS error both
  // halves, a failed read the read half, a failed send the write half.
  template <class Op>
  Result<Outcome> drive(Op op, Deadline deadline, std::error_code eof);

  // Sends what OpenSSL wrote, in order. Poisons the write half on failure.
  Result<void> send_output(Deadline deadline);

  // SSL_read_ex into [out, out + len): its byte count, or 0 after close_notify.
  Result<std::size_t> read_record(std::byte* out, std::size_t len, Deadline deadline);

  void ensure_buffer() {
    if (buf) return;
    buf = std::make_unique_for_overwrite<std::byte[]>(kRecordPlaintext);
    pos = end = 0;
  }

  Context context;  // keeps the SSL_CTX's ALPN list alive for the handshake
  net::TcpStream tcp;
  Transport transport;  // before ssl, which refers to it: destroyed after it
  SSL* ssl;
  // The plaintext buffer: bytes [pos, end) are buffered.
  // Invariant: pos <= end <= kRecordPlaintext; all zero until the first fill.
  std::unique_ptr<std::byte[]> buf;
  std::size_t pos = 0;
  std::size_t end = 0;
  bool read_poisoned = false;
  bool write_poisoned = false;
  bool read_eof = false;  // the peer's close_notify has arrived
  // The send keys are in the kernel: write_all hands it plaintext.
  bool kernel_send = false;
};

template <class Op>
Result<Session::Outcome> Session::drive(Op op, Deadline deadline, std::error_code eof) {
  for (;;) {
    transport.set_input(tcp.peek());
    ERR_clear_error();
    const int ret = op();
    const int err = SSL_get_error(ssl, ret);
    std::error_code failed;
    if (err == SSL_ERROR_SSL || err == SSL_ERROR_SYSCALL) {
      failed = take_error(ssl, eof);
    } else if (err != SSL_ERROR_NONE && err != SSL_ERROR_WANT_READ &&
               err != SSL_ERROR_ZERO_RETURN) {
      ERR_clear_error();
      failed = make_error_code(std::errc::protocol_error);  // our BIO never asks to retry a write
    }
    tcp.consume(transport.taken());
    transport.clear_input();
    if (transport.has_output()) {
      if (auto sent = send_output(deadline); !sent && !failed) return failure(sent.error());
    }
    if (failed) {
      read_poisoned = write_poisoned = true;
      return failure(failed);
    }
    if (err == SSL_ERROR_NONE) return Outcome::kDone;
    if (err == SSL_ERROR_ZERO_RETURN) return Outcome::kClosed;
    auto n = tcp.fill(net::Timeout::at(deadline));
    if (!n) {
      read_poisoned = true;
      return failure(n.error());
    }
    if (*n == 0) transport.set_input_eof();
  }
}

Result<void> Session::send_output(Deadline deadline) {
  if (write_poisoned) {  // the bytes before these are lost: sending these would garble the stream
    transport.cipher().clear();
    transport.kernel().clear();
    return failure(spindle::errc::closed);
  }
  Result<void> sent;
  if (std::string& cipher = transport.cipher(); !cipher.empty()) {
    sent = tcp.write_all(cipher, net::Timeout::at(deadline));
    if (cipher.capacity() > kKeptOutput) {
      std::string().swap(cipher);
    } else {
      cipher.clear();
    }
  }
  std::vector<KernelItem>& items = transport.kernel();
  KernelOffloadOps& kernel = kernel_offload_ops();
  for (KernelItem& item : items) {
    if (!sent) break;
    if (item.kind == KernelItem::Kind::kKeys) {
      sent = kernel.install(tcp, item.bytes);
      OPENSSL_cleanse(item.bytes.data(), item.bytes.size());
      kernel_send = kernel_send || sent.has_value();
    } else {
      sent = kernel.send(tcp, item.type, item.bytes, deadline);
    }
  }
  items.clear();
  if (!sent) write_poisoned = true;
  return sent;
}

Result<std::size_t> Session::read_record(std::byte* out, std::size_t len, Deadline deadline) {
  std::size_t n = 0;
  auto r = drive([&] { return SSL_read_ex(ssl, out, len, &n); }, deadline,
                 make_error_code(errc::truncated));
  if (!r) return failure(r.error());
  if (*r == Outcome::kClosed) {
    read_eof = true;
    return 0;
  }
  return n;
}

}  // namespace detail

TlsStream::TlsStream() noexcept = default;
TlsStream::TlsStream(std::unique_ptr<detail::Session> session) noexcept
    : session_(std::move(session)) {}
TlsStream::TlsStream(TlsStream&& o) noexcept = default;
TlsStream& TlsStream::operator=(TlsStream&& o) noexcept = default;
TlsStream::~TlsStream() = default;

Result<TlsStream> TlsStream::connect(const Context& context, net::TcpStream&& stream,
                                     std::string_view host_name, net::Timeout timeout) {
  return handshake(context, std::move(stream), host_name, timeout);
}

Result<TlsStream> TlsStream::accept(const Context& context, net::TcpStream&& stream,
                                    net::Timeout timeout) {
  return handshake(context, std::move(stream), {}, timeout);
}

Result<TlsStream> TlsStream::handshake(const Context& context, net::TcpStream&& stream,
                                       std::string_view host_name, net::Timeout timeout) {
  if (!stream.is_open()) return failure(spindle::errc::closed);
  const detail::ContextState& state = context.state();
  const Deadline deadline = timeout.deadline(current_config().connect_timeout);
  auto session = std::make_unique<detail::Session>(context, std::move(stream));
  SSL* ssl = session->ssl;
  auto give_back = [&](std::error_code e) -> Result<TlsStream> {
    stream = std::move(session->tcp);
    return failure(e);
  };
  if (state.server) {
    SSL_set_accept_state(ssl);
  } else {
    SSL_set_connect_state(ssl);
    if (auto named = set_peer_name(ssl, host_name, state.verify); !named)
      return give_back(named.error());
  }
  if (state.kernel_offload == KernelOffload::kAuto) {
    detail::KernelOffloadOps& kernel = detail::kernel_offload_ops();
    if (kernel.available() && kernel.attach(session->tcp.native_handle())) {
      session->transport.allow_kernel_send();
      SSL_set_options(ssl, SSL_OP_ENABLE_KTLS);
    }
  }
  auto done = session->drive([ssl] { return SSL_do_handshake(ssl); }, deadline,
                             make_error_code(errc::closed_in_handshake));
  if (!done) return give_back(done.error());
  if (*done == detail::Session::Outcome::kClosed)
    return give_back(make_error_code(errc::closed_in_handshake));
  return TlsStream(std::move(session));
}

Result<std::size_t> TlsStream::read(std::span<std::byte> buf, net::Timeout timeout) {
  if (!session_ || session_->read_poisoned) return failure(spindle::errc::closed);
  detail::Session& s = *session_;
  if (buf.empty()) return 0;
  if (s.pos < s.end) {
    const std::size_t n = std::min(buf.size(), s.end - s.pos);
    std::memcpy(buf.data(), s.buf.get() + s.pos, n);
    consume(n);
    return n;
  }
  if (s.read_eof) return 0;
  return s.read_record(buf.data(), buf.size(), read_write_deadline(timeout));
}

Result<std::size_t> TlsStream::read(std::span<char> buf, net::Timeout timeout) {
  return read(bytes(buf), timeout);
}

Result<void> TlsStream::read_exact(std::span<std::byte> buf, net::Timeout timeout) {
  if (!session_ || session_->read_poisoned) return failure(spindle::errc::closed);
  detail::Session& s = *session_;
  std::size_t done = 0;
  std::optional<Deadline> deadline;
  while (done < buf.size()) {
    if (s.pos < s.end) {
      const std::size_t n = std::min(buf.size() - done, s.end - s.pos);
      std::memcpy(buf.data() + done, s.buf.get() + s.pos, n);
      consume(n);
      done += n;
      continue;
    }
    if (!deadline) deadline = read_write_deadline(timeout);
    auto r = s.read_eof ? Result<std::size_t>(0)
                        : s.read_record(buf.data() + done, buf.size() - done, *deadline);
    if (!r) return failure(r.error());
    if (*r == 0) {
      s.read_poisoned = true;  // part of the message may be gone already
      return failure(spindle::errc::closed);
    }
    done += *r;
  }
  return {};
}

Result<void> TlsStream::read_exact(std::span<char> buf, net::Timeout timeout) {
  return read_exact(bytes(buf), timeout);
}

std::span<const std::byte> TlsStream::peek(std::size_t max) const noexcept {
  if (!session_ || !session_->buf) return {};
  const detail::Session& s = *session_;
  return {s.buf.get() + s.pos, std::min(max, s.end - s.pos)};
}

void TlsStream::consume(std::size_t n) noexcept {
  if (!session_) return;
  detail::Session& s = *session_;
  s.pos += std::min(n, s.end - s.pos);
  if (s.pos == s.end) s.pos = s.end = 0;
}

Result<std::size_t> TlsStream::fill(net::Timeout timeout) {
  if (!session_ || session_->read_poisoned) return failure(spindle::errc::closed);
  detail::Session& s = *session_;
  s.ensure_buffer();
  if (s.end == kRecordPlaintext) {
    if (s.pos == 0) return errno_failure(ENOBUFS);
    std::memmove(s.buf.get(), s.buf.get() + s.pos, s.end - s.pos);
    s.end -= s.pos;
    s.pos = 0;
  }
  if (s.read_eof) return 0;
  auto r =
      s.read_record(s.buf.get() + s.end, kRecordPlaintext - s.end, read_write_deadline(timeout));
  if (r) s.end += *r;
  return r;
}

Result<void> TlsStream::write_all(std::span<const std::byte> buf, net::Timeout timeout) {
  if (!session_ || session_->write_poisoned) return failure(spindle::errc::closed);
  detail::Session& s = *session_;
  if (buf.empty()) return {};
  const Deadline deadline = read_write_deadline(timeout);
  if (s.kernel_send) {
    // The kernel frames and encrypts: the caller's bytes go straight out.
    auto sent = detail::kernel_offload_ops().send(
        s.tcp, detail::kApplicationData, {reinterpret_cast<const char*>(buf.data()), buf.size()},
        deadline);
    if (!sent) s.write_poisoned = true;
    return sent;
  }
  while (!buf.empty()) {
    const std::size_t n = std::min(buf.size(), kWriteChunk);
    std::size_t written = 0;
    auto r = s.drive([&] { return SSL_write_ex(s.ssl, buf.data(), n, &written); }, deadline,
                     make_error_code(errc::truncated));
    if (!r) return failure(r.error());
    buf = buf.subspan(written);
  }
  return {};
}

Result<void> TlsStream::write_all(std::string_view buf, net::Timeout timeout) {
  return write_all(std::as_bytes(std::span(buf.data(), buf.size())), timeout);
}

Result<void> TlsStream::shutdown(net::Shutdown how, net::Timeout timeout) {
  if (!session_) return failure(spindle::errc::closed);
  detail::Session& s = *session_;
  if (how != net::Shutdown::kRead && !s.write_poisoned) {
    // Writes close_notify into the transport (0 or 1: sent; it never reads here).
    ERR_clear_error();
    const int r = SSL_shutdown(s.ssl);
    ERR_clear_error();
    if (r >= 0) {
      if (auto sent = s.send_output(read_write_deadline(timeout)); !sent) return sent;
    }
    s.write_poisoned = true;  // nothing may follow close_notify
  }
  return s.tcp.shutdown(how);
}

Result<net::SocketAddress> TlsStream::local_addr() const {
  if (!session_) return failure(spindle::errc::closed);
  return session_->tcp.local_addr();
}

Result<net::SocketAddress> TlsStream::peer_addr() const {
  if (!session_) return failure(spindle::errc::closed);
  return session_->tcp.peer_addr();
}

bool TlsStream::is_open() const noexcept { return session_ && session_->tcp.is_open(); }

int TlsStream::native_handle() const noexcept {
  return session_ ? session_->tcp.native_handle() : -1;
}

bool TlsStream::kernel_offload() const noexcept { return session_ && session_->kernel_send; }

std::string_view TlsStream::alpn() const noexcept {
  if (!session_) return {};
  const unsigned char* data = nullptr;
  unsigned len = 0;
  SSL_get0_alpn_selected(session_->ssl, &data, &len);
  return {reinterpret_cast<const char*>(data), len};
}

std::string_view TlsStream::server_name() const noexcept {
  if (!session_) return {};
  const char* name = SSL_get_servername(session_->ssl, TLSEXT_NAMETYPE_host_name);
  return name != nullptr ? std::string_view(name) : std::string_view();
}

std::string_view TlsStream::version() const noexcept {
  return session_ ? std::string_view(SSL_get_version(session_->ssl)) : std::string_view();
}

void TlsStream::close() noexcept { session_.reset(); }

net::TcpStream TlsStream::into_tcp() && noexcept {
  if (!session_) return {};
  net::TcpStream tcp = std::move(session_->tcp);
  session_.reset();
  return tcp;
}

}  // namespace spindle::tls
