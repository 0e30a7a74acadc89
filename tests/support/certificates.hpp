// Certificates for the TLS tests, made at test time by the openssl program
// (`openssl req` and `openssl x509`, EC P-256 keys): a CA the tests trust,
// certificates it signs for localhost (one valid, one expired, one for
// another host name, one for clients), and one for localhost signed by a CA
// nobody trusts. A test that calls certificates() on a machine without
// openssl is skipped with a message. Made once per process, on a plain
// thread (std::system), before any runtime runs.
#pragma once

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#include "skip.hpp"
#include "temp_dir.hpp"

namespace spindle::test {

struct CertificatePair {
  std::string certificate;  // PEM chain file (the leaf)
  std::string key;          // PEM private key file
};

namespace detail {

inline std::string read_text(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Runs `openssl <args>` in `dir`; fails the test with its output if it fails.
inline void openssl(const std::filesystem::path& dir, const std::string& args) {
  const std::string log = (dir / "openssl.log").string();
  const std::string command =
      "cd '" + dir.string() + "' && openssl " + args + " >'" + log + "' 2>&1";
  if (std::system(command.c_str()) != 0) FAIL("openssl " << args << ":\n" << read_text(log));
}

constexpr const char* kNewKey = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";

// A self-signed CA named `name` (files <name>.pem, <name>.key).
inline void make_ca(const std::filesystem::path& dir, const std::string& name) {
  openssl(dir, "req -x509 " + std::string(kNewKey) + " -days 30 -subj '/CN=spindle test " + name +
                   "' -addext basicConstraints=critical,CA:TRUE -addext "
                   "keyUsage=critical,keyCertSign,cRLSign -keyout " +
                   name + ".key -out " + name + ".pem");
}

// A certificate `name` signed by CA `ca`, valid for `days` (negative: expired).
inline CertificatePair make_leaf(const std::filesystem::path& dir, const std::string& name,
                                 const std::string& ca, const std::string& alt_names, int days,
                                 const std::string& usage = "serverAuth") {
  std::ofstream(dir / (name + ".ext"))
      << "subjectAltName=" << alt_names << "\nbasicConstraints=CA:FALSE\nextendedKeyUsage=" << usage
      << "\n";
  openssl(dir, "req -new " + std::string(kNewKey) + " -subj '/CN=" + name + "' -keyout " + name +
                   ".key -out " + name + ".csr");
  openssl(dir, "x509 -req -in " + name + ".csr -CA " + ca + ".pem -CAkey " + ca +
                   ".key -CAcreateserial -days " + std::to_string(days) + " -extfile " + name +
                   ".ext -out " + name + ".pem");
  return {(dir / (name + ".pem")).string(), (dir / (name + ".key")).string()};
}

inline bool have_openssl() { return std::system("command -v openssl >/dev/null 2>&1") == 0; }

}  // namespace detail

struct Certificates {
  Certificates();

  TempDir dir;
  std::string ca;              // the trusted CA's certificate (PEM)
  CertificatePair server;      // CN/SAN localhost and IP 127.0.0.1, valid for 30 days
  CertificatePair expired;     // the same names, expired a day ago
  CertificatePair wrong_host;  // SAN other.example only
  CertificatePair unknown_ca;  // localhost, signed by a CA not in `ca`
  CertificatePair client;      // a client certificate (extendedKeyUsage clientAuth)
};

inline Certificates::Certificates() {
  const auto& d = dir.path();
  detail::make_ca(d, "ca");
  detail::make_ca(d, "other-ca");
  ca = (d / "ca.pem").string();
  const std::string localhost = "DNS:localhost,IP:127.0.0.1";
  server = detail::make_leaf(d, "server", "ca", localhost, 30);
  expired = detail::make_leaf(d, "expired", "ca", localhost, -1);
  wrong_host = detail::make_leaf(d, "wrong-host", "ca", "DNS:other.example", 30);
  unknown_ca = detail::make_leaf(d, "unknown-ca", "other-ca", localhost, 30);
  client = detail::make_leaf(d, "client", "ca", "DNS:client.example", 30, "clientAuth");
}

inline const Certificates& certificates() {
  if (!detail::have_openssl())
    SPINDLE_SKIP("the openssl program is not installed: it makes the TLS tests' certificates");
  static const Certificates made;
  return made;
}

}  // namespace spindle::test
