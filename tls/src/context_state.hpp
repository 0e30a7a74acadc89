// What a tls::Context holds: the SSL_CTX and the choices TlsStream reads.
#pragma once

#include <openssl/ssl.h>

#include <string>

#include "spindle/tls/context.hpp"

namespace spindle::tls::detail {

// Immutable once made, so any number of threads may read it (an SSL_CTX is
// thread-safe for SSL_new).
struct ContextState {
  ContextState() = default;
  ContextState(const ContextState&) = delete;
  ContextState& operator=(const ContextState&) = delete;
  ~ContextState() { SSL_CTX_free(ctx); }

  SSL_CTX* ctx = nullptr;
  bool server = false;
  bool verify = false;
  KernelOffload kernel_offload = KernelOffload::kAuto;
  // The ALPN list in its wire form (each name after its length byte).
  std::string alpn;
};

}  // namespace spindle::tls::detail
