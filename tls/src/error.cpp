#include "spindle/tls/error.hpp"

#include <openssl/err.h>
#include <openssl/x509.h>

#include <string>

#include "openssl_error.hpp"

namespace spindle::tls {
namespace {

class TlsCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "spindle.tls"; }
  std::string message(int value) const override {
    switch (static_cast<errc>(value)) {
      case errc::truncated:
        return "tls: the peer closed the connection without close_notify";
      case errc::closed_in_handshake:
        return "tls: the peer closed the connection during the handshake";
      case errc::kernel_offload_refused:
        return "tls: the kernel refused the session keys for TLS offload";
      case errc::no_host_name:
        return "tls: peer verification needs the server's host name";
    }
    return "tls: unknown error";
  }
};

class VerifyCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "spindle.tls.verify"; }
  std::string message(int value) const override {
    return std::string("tls: certificate verification failed: ") +
           X509_verify_cert_error_string(value);
  }
};

class OpensslCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "openssl"; }
  std::string message(int value) const override {
    const auto code = static_cast<unsigned long>(value);
    if (const char* reason = ERR_reason_error_string(code)) return std::string("tls: ") + reason;
    char text[256];
    ERR_error_string_n(code, text, sizeof text);
    return std::string("tls: ") + text;
  }
};

}  // namespace

const std::error_category& tls_category() noexcept {
  static const TlsCategory category;
  return category;
}

const std::error_category& verify_category() noexcept {
  static const VerifyCategory category;
  return category;
}

const std::error_category& openssl_category() noexcept {
  static const OpensslCategory category;
  return category;
}

namespace detail {

std::error_code take_error(const SSL* ssl, std::error_code eof) {
  const unsigned long first = ERR_get_error();
  ERR_clear_error();
  if (first == 0) return eof;  // SSL_ERROR_SYSCALL with nothing queued: our BIO's end of input
  if (ERR_SYSTEM_ERROR(first)) return {ERR_GET_REASON(first), std::system_category()};
  if (ERR_GET_LIB(first) == ERR_LIB_SSL) {
    switch (ERR_GET_REASON(first)) {
      case SSL_R_CERTIFICATE_VERIFY_FAILED:
        if (const long v = SSL_get_verify_result(ssl); v != X509_V_OK)
          return {static_cast<int>(v), verify_category()};
        break;
      case SSL_R_UNEXPECTED_EOF_WHILE_READING:
        return eof;
      default:
        break;
    }
  }
  // Every non-system code fits in 31 bits (library << 23 | reason).
  return {static_cast<int>(first & 0x7fffffffUL), openssl_category()};
}

std::string take_error_text(const char* fallback) {
  const unsigned long first = ERR_get_error();
  ERR_clear_error();
  if (first == 0) return fallback;
  if (ERR_SYSTEM_ERROR(first)) return std::system_category().message(ERR_GET_REASON(first));
  if (const char* reason = ERR_reason_error_string(first)) return reason;
  char text[256];
  ERR_error_string_n(first, text, sizeof text);
  return text;
}

}  // namespace detail
}  // namespace spindle::tls
