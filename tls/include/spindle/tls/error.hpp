// The errors of spindle::tls, as std::error_code in three categories:
// - tls_category(): conditions of this library (tls::errc);
// - verify_category(): why the peer's certificate was refused, one value per
//   X509_V_ERR_* code ("certificate verification failed: hostname mismatch");
// - openssl_category(): any other OpenSSL error (a protocol error, an alert
//   from the peer: "tlsv1 alert unknown ca"), the packed ERR_get_error() code.
// Socket errors keep their own codes (errno, errc::timed_out, errc::aborted).
// Stateless category objects: thread-safe; nothing here suspends.
#pragma once

#include <system_error>

namespace spindle::tls {

enum class errc : int {
  // The peer closed the connection without a close_notify: what was read may
  // be cut short (a truncation attack cannot be told from a crash).
  truncated = 1,
  // The peer closed the connection before the handshake completed.
  closed_in_handshake,
  // The kernel refused the session's keys for TLS offload (TLS_TX).
  kernel_offload_refused,
  // connect() was asked to verify the peer but given no host name.
  no_host_name,
};

const std::error_category& tls_category() noexcept;
const std::error_category& verify_category() noexcept;
const std::error_category& openssl_category() noexcept;

inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), tls_category()};
}

// True if `e` says the peer's certificate was refused (verify_category()).
inline bool is_verify_error(const std::error_code& e) noexcept {
  return e.category() == verify_category();
}

}  // namespace spindle::tls

template <>
struct std::is_error_code_enum<spindle::tls::errc> : std::true_type {};
