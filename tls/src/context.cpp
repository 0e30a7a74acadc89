// Making a Context: every file is read here, so a handshake never touches
// the disk. CA directories are loaded whole, not looked up by hash during
// verification as OpenSSL's directory lookup would.

#include "spindle/tls/context.hpp"

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "context_state.hpp"
#include "kernel_offload.hpp"
#include "openssl_error.hpp"
#include "spindle/tls/kernel_tls.hpp"

namespace spindle::tls {
namespace {

[[noreturn]] void refuse(std::string_view setting, std::string_view path, std::string_view why) {
  throw std::invalid_argument(fmt::format("tls: {} \"{}\": {}", setting, path, why));
}

std::string wire_alpn(const std::vector<std::string>& names) {
  std::string wire;
  for (const auto& name : names) {
    if (name.empty() || name.size() > 255)
      throw std::invalid_argument(
          fmt::format("tls: alpn: \"{}\": a protocol name has 1 to 255 bytes", name));
    wire += static_cast<char>(name.size());
    wire += name;
  }
  return wire;
}

// A key file that is encrypted fails to load instead of asking for a
// password on the terminal.
int no_password(char*, int, int, void*) { return 0; }

// The server's ALPN choice: the first of its names the client offers.
int select_alpn(SSL*, const unsigned char** out, unsigned char* out_len, const unsigned char* in,
                unsigned in_len, void* arg) {
  const auto* wire = static_cast<const std::string*>(arg);
  unsigned char* chosen = nullptr;
  if (SSL_select_next_proto(&chosen, out_len, reinterpret_cast<const unsigned char*>(wire->data()),
                            static_cast<unsigned>(wire->size()), in,
                            in_len) != OPENSSL_NPN_NEGOTIATED)
    return SSL_TLSEXT_ERR_NOACK;
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

void load_ca_file(X509_STORE* store, std::string_view setting, const std::string& path) {
  ERR_clear_error();
  if (X509_STORE_load_file(store, path.c_str()) != 1) {
    refuse(setting, path,
           "cannot load PEM certificates: " + detail::take_error_text("no certificate in it"));
  }
}

// Every regular file in `dir` (symbolic links followed), each a PEM file.
void load_ca_dir(X509_STORE* store, std::string_view setting, const std::string& dir) {
  std::error_code ec;
  std::size_t loaded = 0;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    load_ca_file(store, setting, it->path().string());
    ++loaded;
  }
  if (ec) refuse(setting, dir, ec.message());
  if (loaded == 0) refuse(setting, dir, "no certificate files in it");
}

// OpenSSL's default file (SSL_CERT_FILE overrides it), else its default
// directory (SSL_CERT_DIR overrides it).
void load_system_cas(X509_STORE* store) {
  const char* file = std::getenv(X509_get_default_cert_file_env());
  if (file == nullptr) file = X509_get_default_cert_file();
  if (::access(file, R_OK) == 0) return load_ca_file(store, "system CA file", file);
  const char* dir = std::getenv(X509_get_default_cert_dir_env());
  if (dir == nullptr) dir = X509_get_default_cert_dir();
  if (::access(dir, R_OK | X_OK) == 0) return load_ca_dir(store, "system CA directory", dir);
  throw std::invalid_argument(
      fmt::format("tls: no system CA store (neither {} nor {} is readable): name one with ca_file "
                  "or ca_dir",
                  file, dir));
}

void load_certificate(SSL_CTX* ctx, const ContextOptions& o) {
  if (o.certificate_chain_file.empty() != o.private_key_file.empty()) {
    throw std::invalid_argument(
        "tls: certificate_chain_file and private_key_file go together: name both or neither");
  }
  if (o.certificate_chain_file.empty()) return;
  ERR_clear_error();
  if (SSL_CTX_use_certificate_chain_file(ctx, o.certificate_chain_file.c_str()) != 1) {
    refuse("certificate_chain_file", o.certificate_chain_file,
           "cannot load a PEM certificate chain: " + detail::take_error_text("no certificate"));
  }
  const bool loaded =
      SSL_CTX_use_PrivateKey_file(ctx, o.private_key_file.c_str(), SSL_FILETYPE_PEM) == 1;
  const bool mismatch = loaded
                            ? SSL_CTX_check_private_key(ctx) != 1
                            : ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH;
  if (mismatch) {
    ERR_clear_error();
    throw std::invalid_argument(
        fmt::format("tls: private_key_file \"{}\" is not the key of certificate_chain_file \"{}\"",
                    o.private_key_file, o.certificate_chain_file));
  }
  if (!loaded) {
    refuse("private_key_file", o.private_key_file,
           "cannot load a PEM private key: " + detail::take_error_text("no key"));
  }
}

std::shared_ptr<detail::ContextState> make(const ContextOptions& o, bool server) {
  auto state = std::make_shared<detail::ContextState>();
  state->server = server;
  state->verify = server ? o.verify == Verify::kOn : o.verify != Verify::kOff;
  state->kernel_offload = o.kernel_offload;
  state->alpn = wire_alpn(o.alpn);
  if (server && o.certificate_chain_file.empty())
    throw std::invalid_argument("tls: a server needs certificate_chain_file and private_key_file");
  if (server && state->verify && o.ca_file.empty() && o.ca_dir.empty())
    throw std::invalid_argument("tls: a server that verifies clients needs ca_file or ca_dir");

  state->ctx = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
  if (state->ctx == nullptr) throw std::bad_alloc();
  SSL_CTX* ctx = state->ctx;
  SSL_CTX_set_min_proto_version(ctx,
                                o.min_version == Version::kTls13 ? TLS1_3_VERSION : TLS1_2_VERSION);
  // Renegotiation (TLS 1.2) is refused; idle connections give their record
  // buffers back to the allocator.
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
  SSL_CTX_set_default_passwd_cb(ctx, &no_password);
  load_certificate(ctx, o);

  if (state->verify) {
    X509_STORE* store = SSL_CTX_get_cert_store(ctx);
    if (!o.ca_file.empty()) load_ca_file(store, "ca_file", o.ca_file);
    if (!o.ca_dir.empty()) load_ca_dir(store, "ca_dir", o.ca_dir);
    if (o.ca_file.empty() && o.ca_dir.empty()) load_system_cas(store);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | (server ? SSL_VERIFY_FAIL_IF_NO_PEER_CERT : 0),
                       nullptr);
    X509_VERIFY_PARAM_set_hostflags(SSL_CTX_get0_param(ctx), X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  } else {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
  }

  if (server) {
    static constexpr unsigned char kSessionContext[] = "spindle";
    SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof kSessionContext - 1);
    if (!state->alpn.empty()) SSL_CTX_set_alpn_select_cb(ctx, &select_alpn, &state->alpn);
  } else if (!state->alpn.empty()) {
    // 0 is success here.
    if (SSL_CTX_set_alpn_protos(ctx, reinterpret_cast<const unsigned char*>(state->alpn.data()),
                                static_cast<unsigned>(state->alpn.size())) != 0)
      throw std::bad_alloc();
  }
  if (o.kernel_offload == KernelOffload::kAuto) (void)kernel_tls();  // logs the answer once
  // Certificate checks call gmtime_r, whose first call in a process reads
  // /etc/localtime: have it read now, off the workers, not in a handshake.
  ::tzset();
  ERR_clear_error();
  return state;
}

}  // namespace

Context Context::client(const ContextOptions& options) { return Context(make(options, false)); }

Context Context::server(const ContextOptions& options) { return Context(make(options, true)); }

bool Context::is_server() const noexcept { return state_->server; }

bool Context::kernel_offload() const noexcept {
  return state_->kernel_offload == KernelOffload::kAuto && detail::kernel_offload_ops().available();
}

}  // namespace spindle::tls
