// What the OpenSSL error queue says, as std::error_code or as text. The queue
// is per thread: read it right after the OpenSSL call that failed, before
// anything that may park the fiber (it may resume on another thread).
#pragma once

#include <openssl/ssl.h>

#include <string>
#include <system_error>

namespace spindle::tls::detail {

// The error of a failed SSL_do_handshake/SSL_read_ex/SSL_write_ex/SSL_shutdown
// on `ssl` whose SSL_get_error() is SSL_ERROR_SSL or SSL_ERROR_SYSCALL: a
// refused certificate in verify_category(), an end of input without
// close_notify as `eof` (errc::truncated or errc::closed_in_handshake), any
// other queued error in openssl_category(). Empties the thread's queue.
std::error_code take_error(const SSL* ssl, std::error_code eof);

// The first queued error's reason ("no such file", "no start line"), or
// `fallback` when the queue is empty. Empties the thread's queue.
std::string take_error_text(const char* fallback);

}  // namespace spindle::tls::detail
