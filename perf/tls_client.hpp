// A TLS client for the https rows' start-up probe: it checks a server's
// answers, and which protocol, cipher suite and group the server chose.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

struct ssl_ctx_st;
struct ssl_st;

namespace spindle::perf {

// One blocking TLS connection over a connected socket (which it does not
// own; its SO_RCVTIMEO and SO_SNDTIMEO bound every call). It does not check
// the server's certificate. Its offer is fixed here, whatever configuration
// this process's OpenSSL loaded: TLS 1.2 and 1.3, the TLS 1.3 suites with
// TLS_AES_256_GCM_SHA384 first, the groups P-256 then X25519 (a key share
// for P-256 only), so the suite, the group and the version negotiated are
// the server's own choice. Failures throw PerfError naming `what`. Not
// thread-safe.
class TlsClient {
 public:
  // Runs the handshake.
  TlsClient(int fd, std::string_view what);
  TlsClient(const TlsClient&) = delete;
  TlsClient& operator=(const TlsClient&) = delete;
  ~TlsClient() = default;

  void send_all(std::string_view data);
  // Up to `size` bytes into `buf`; 0 at the end of the stream (the
  // server's close_notify, or its FIN without one).
  std::size_t receive(char* buf, std::size_t size);
  // "TLSv1.3 TLS_AES_128_GCM_SHA256 X25519": the protocol version, the
  // cipher suite and the key exchange group of the handshake.
  std::string negotiated() const;
  // Whether the server has sent a session ticket the session could be
  // resumed with (read with the data that came after it).
  bool resumable() const;

 private:
  [[noreturn]] void fail(std::string_view call, int ret) const;

  struct Free {
    void operator()(ssl_ctx_st* ctx) const noexcept;
    void operator()(ssl_st* ssl) const noexcept;
  };
  std::string what_;
  std::unique_ptr<ssl_ctx_st, Free> ctx_;
  std::unique_ptr<ssl_st, Free> ssl_;  // after ctx_: freed first
};

}  // namespace spindle::perf
