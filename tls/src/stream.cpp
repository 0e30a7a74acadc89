// TlsStream: the public calls over a Session (session.cpp): argument checks,
// the plaintext buffer, poisoning.

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
#include "session.hpp"
#include "spindle/sched/runtime.hpp"
#include "spindle/tls/error.hpp"

namespace spindle::tls {
namespace {

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
  if (auto done = session->handshake(deadline); !done) return give_back(done.error());
  return TlsStream(std::move(session));
}

Result<std::size_t> TlsStream::read(std::span<std::byte> buf, net::Timeout timeout) {
  if (!session_ || session_->read_closed()) return failure(spindle::errc::closed);
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
  if (!session_ || session_->read_closed()) return failure(spindle::errc::closed);
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
  if (!session_ || session_->read_closed()) return failure(spindle::errc::closed);
  detail::Session& s = *session_;
  s.ensure_buffer();
  if (s.end == detail::kRecordPlaintext) {
    if (s.pos == 0) return errno_failure(ENOBUFS);
    std::memmove(s.buf.get(), s.buf.get() + s.pos, s.end - s.pos);
    s.end -= s.pos;
    s.pos = 0;
  }
  if (s.read_eof) return 0;
  auto r = s.read_record(s.buf.get() + s.end, detail::kRecordPlaintext - s.end,
                         read_write_deadline(timeout));
  if (r) s.end += *r;
  return r;
}

Result<void> TlsStream::write_all(std::span<const std::byte> buf, net::Timeout timeout) {
  if (!session_) return failure(spindle::errc::closed);
  if (buf.empty()) return {};
  return session_->write(buf, read_write_deadline(timeout));
}

Result<void> TlsStream::write_all(std::string_view buf, net::Timeout timeout) {
  return write_all(std::as_bytes(std::span(buf.data(), buf.size())), timeout);
}

Result<void> TlsStream::shutdown(net::Shutdown how, net::Timeout timeout) {
  if (!session_) return failure(spindle::errc::closed);
  if (how != net::Shutdown::kRead) {
    if (auto sent = session_->close_notify(read_write_deadline(timeout)); !sent) return sent;
  }
  return session_->tcp.shutdown(how);
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

bool TlsStream::kernel_offload() const noexcept {
  return session_ && session_->kernel_send.load(std::memory_order_relaxed);
}

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
