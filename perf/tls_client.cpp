#include "tls_client.hpp"

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/objects.h>
#include <openssl/ssl.h>

#include <cerrno>
#include <cstring>

#include "measure.hpp"

namespace spindle::perf {
namespace {

constexpr const char* kOfferedSuites =
    "TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256";
constexpr const char* kOfferedGroups = "P-256:X25519";

}  // namespace

void TlsClient::Free::operator()(ssl_ctx_st* ctx) const noexcept { SSL_CTX_free(ctx); }
void TlsClient::Free::operator()(ssl_st* ssl) const noexcept { SSL_free(ssl); }

TlsClient::TlsClient(int fd, std::string_view what) : what_(what) {
  ctx_.reset(SSL_CTX_new(TLS_client_method()));
  check(ctx_ != nullptr, "{}: SSL_CTX_new failed", what_);
  SSL_CTX* ctx = ctx_.get();
  // A FIN without close_notify ends the stream as close_notify does.
  SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
  check(SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) == 1 &&
            SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) == 1 &&
            SSL_CTX_set_ciphersuites(ctx, kOfferedSuites) == 1 &&
            SSL_CTX_set1_groups_list(ctx, kOfferedGroups) == 1,
        "{}: this OpenSSL does not take the probe's offer ({}; {})", what_, kOfferedSuites,
        kOfferedGroups);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  ssl_.reset(SSL_new(ctx));
  check(ssl_ != nullptr && SSL_set_fd(ssl_.get(), fd) == 1, "{}: SSL_new failed", what_);
  ERR_clear_error();
  if (const int r = SSL_connect(ssl_.get()); r != 1) fail("the TLS handshake", r);
}

void TlsClient::send_all(std::string_view data) {
  std::size_t sent = 0;
  ERR_clear_error();
  if (const int r = SSL_write_ex(ssl_.get(), data.data(), data.size(), &sent);
      r != 1 || sent != data.size()) {
    fail("sending a request over TLS", r);
  }
}

std::size_t TlsClient::receive(char* buf, std::size_t size) {
  std::size_t n = 0;
  ERR_clear_error();
  const int r = SSL_read_ex(ssl_.get(), buf, size, &n);
  if (r == 1) return n;
  if (SSL_get_error(ssl_.get(), r) == SSL_ERROR_ZERO_RETURN) return 0;
  fail("receiving a response over TLS", r);
}

std::string TlsClient::negotiated() const {
  const int group = SSL_get_negotiated_group(ssl_.get());
  const char* group_name = group != 0 ? OBJ_nid2sn(group) : nullptr;
  return fmt::format("{} {} {}", SSL_get_version(ssl_.get()), SSL_get_cipher_name(ssl_.get()),
                     group_name != nullptr ? group_name : "(no group)");
}

bool TlsClient::resumable() const {
  const SSL_SESSION* session = SSL_get_session(ssl_.get());
  return session != nullptr && SSL_SESSION_is_resumable(session) == 1;
}

void TlsClient::fail(std::string_view call, int ret) const {
  const int saved_errno = errno;
  const int error = SSL_get_error(ssl_.get(), ret);
  std::string why;
  if (const unsigned long e = ERR_get_error(); e != 0) {
    char text[256];
    ERR_error_string_n(e, text, sizeof text);
    why = text;
  } else if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
    why = "the socket timed out";
  } else if (error == SSL_ERROR_SYSCALL) {
    why = saved_errno != 0 ? std::strerror(saved_errno) : "the server closed the connection";
  } else {
    why = fmt::format("SSL_get_error {}", error);
  }
  ERR_clear_error();
  throw PerfError(fmt::format("{}: {}: {}", what_, call, why));
}

}  // namespace spindle::perf
