// tls::Context: what every TLS connection of one side shares — its
// certificate and key, the CAs it trusts, the protocols it offers (ALPN), the
// lowest TLS version it accepts, and whether it checks its peer. Clients
// verify the server's certificate chain and host name by default.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace spindle::tls {

namespace detail {
struct ContextState;
}

enum class Version : unsigned char { kTls12, kTls13 };

// Kernel TLS offload (docs/tls.md): after the handshake, the kernel frames
// and encrypts the records this side sends, and writes go straight from the
// caller's bytes to the socket. kAuto uses it where the kernel has the `tls`
// ULP and OpenSSL hands over the session's keys; records are encrypted in
// user space otherwise, and always for what this side receives.
enum class KernelOffload : unsigned char { kOff, kAuto };

// Whether to check the peer's certificate (ContextOptions::verify).
enum class Verify : unsigned char { kDefault, kOn, kOff };

// Plain value. File names are read when the Context is made, never during a
// handshake.
struct ContextOptions {
  // PEM: the certificate first, then the intermediates that lead to a CA.
  // Required for a server; for a client, the certificate it shows a server
  // that asks for one.
  std::string certificate_chain_file{};
  // PEM: the private key of that certificate.
  std::string private_key_file{};
  // The CAs trusted to sign the peer's certificate: a PEM file of
  // certificates, and/or a directory whose every PEM file is loaded. With
  // neither, a client trusts the system's store (OpenSSL's default file,
  // /etc/ssl/certs/ca-certificates.crt on Debian, else its directory).
  std::string ca_file{};
  std::string ca_dir{};
  // ALPN protocol names in order of preference ("h2", "http/1.1"). A client
  // offers them; a server picks the first of its own the client offers, and
  // goes on without ALPN when there is none in common.
  std::vector<std::string> alpn{};
  Version min_version = Version::kTls12;
  // Whether to check the peer's certificate: on by default for a client (the
  // chain up to a trusted CA, the dates, and the host name connect() is
  // given), off by default for a server (on: a client must show a
  // certificate signed by a trusted CA).
  Verify verify = Verify::kDefault;
  KernelOffload kernel_offload = KernelOffload::kAuto;
};

// A shared, immutable handle: copy it freely; any number of fibers and
// threads may start connections with one at once. Making one reads the files
// it names with plain blocking reads: do it before Runtime::run, on a plain
// thread, or in spawn_blocking — not on a fiber that shares its worker.
class Context {
 public:
  // Throws std::invalid_argument naming the setting and the file when a
  // file is missing or unreadable, is not PEM, or the key does not match
  // the certificate; or when a server has no certificate.
  static Context client(const ContextOptions& options = {});
  static Context server(const ContextOptions& options);

  bool is_server() const noexcept;
  // Whether connections of this context try kernel offload: kAuto, and the
  // kernel has the tls ULP (kernel_tls.hpp).
  bool kernel_offload() const noexcept;

  // Internal: the state TlsStream uses.
  const detail::ContextState& state() const noexcept { return *state_; }

 private:
  explicit Context(std::shared_ptr<const detail::ContextState> state) noexcept
      : state_(std::move(state)) {}
  std::shared_ptr<const detail::ContextState> state_;
};

}  // namespace spindle::tls
