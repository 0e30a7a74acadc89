// tls::Context: what a bad setting says, and the defaults.
#include <fstream>
#include <stdexcept>
#include <string>

#include "tls_test_support.hpp"

namespace tls = spindle::tls;

namespace {

// The message of the std::invalid_argument `fn` throws ("" if none).
template <class F>
std::string refusal(F fn) {
  try {
    fn();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a server context names the file it cannot load", "[tls][context]") {
  const auto& certs = spindle::test::certificates();
  const std::string missing = (certs.dir.path() / "missing.pem").string();
  const std::string not_pem = (certs.dir.path() / "not.pem").string();
  std::ofstream(not_pem) << "this is not a certificate\n";

  auto no_chain = refusal([&] {
    tls::Context::server({.certificate_chain_file = missing, .private_key_file = certs.server.key});
  });
  CHECK_THAT(no_chain, Catch::Contains("certificate_chain_file \"" + missing + "\""));
  CHECK_THAT(no_chain, Catch::Contains("No such file or directory"));

  auto bad_chain = refusal([&] {
    tls::Context::server({.certificate_chain_file = not_pem, .private_key_file = certs.server.key});
  });
  CHECK_THAT(bad_chain, Catch::Contains("certificate_chain_file \"" + not_pem + "\""));
  CHECK_THAT(bad_chain, Catch::Contains("cannot load a PEM certificate chain"));

  auto bad_key = refusal([&] {
    tls::Context::server(
        {.certificate_chain_file = certs.server.certificate, .private_key_file = not_pem});
  });
  CHECK_THAT(bad_key, Catch::Contains("private_key_file \"" + not_pem + "\""));

  auto mismatch = refusal([&] {
    tls::Context::server(
        {.certificate_chain_file = certs.server.certificate, .private_key_file = certs.client.key});
  });
  CHECK_THAT(mismatch, Catch::Contains("private_key_file \"" + certs.client.key +
                                       "\" is not the key of certificate_chain_file"));

  CHECK_THAT(refusal([] { tls::Context::server({}); }),
             Catch::Contains("a server needs certificate_chain_file and private_key_file"));
  CHECK_THAT(
      refusal([&] { tls::Context::client({.certificate_chain_file = certs.client.certificate}); }),
      Catch::Contains("go together"));
}

TEST_CASE("a client context names the CA file or directory it cannot load", "[tls][context]") {
  const auto& certs = spindle::test::certificates();
  const std::string missing = (certs.dir.path() / "missing.pem").string();
  auto no_file = refusal([&] { tls::Context::client({.ca_file = missing}); });
  CHECK_THAT(no_file, Catch::Contains("ca_file \"" + missing + "\""));
  const std::string empty_dir = (certs.dir.path() / "empty").string();
  std::filesystem::create_directory(empty_dir);
  CHECK_THAT(refusal([&] { tls::Context::client({.ca_dir = empty_dir}); }),
             Catch::Contains("ca_dir \"" + empty_dir + "\": no certificate files in it"));
  CHECK_THAT(refusal([&] { tls::Context::client({.ca_dir = missing}); }),
             Catch::Contains("ca_dir \"" + missing + "\""));
  CHECK_THAT(refusal([] { tls::Context::client({.alpn = {""}}); }), Catch::Contains("alpn"));
  CHECK_THAT(refusal([&] {
               tls::Context::server({.certificate_chain_file = certs.server.certificate,
                                     .private_key_file = certs.server.key,
                                     .verify = tls::Verify::kOn});
             }),
             Catch::Contains("needs ca_file or ca_dir"));
}

TEST_CASE("a client context trusts the system's CA store by default", "[tls][context]") {
  const auto client = tls::Context::client();
  CHECK_FALSE(client.is_server());
  const auto server = spindle::test::server_context();
  CHECK(server.is_server());
}

TEST_CASE("a CA directory is loaded whole", "[tls][context]") {
  const auto& certs = spindle::test::certificates();
  const auto dir = certs.dir.path() / "cas";
  std::filesystem::create_directory(dir);
  std::filesystem::copy_file(certs.ca, dir / "ca.pem",
                             std::filesystem::copy_options::overwrite_existing);
  const auto server_ctx = spindle::test::server_context();
  const auto client_ctx = tls::Context::client({.ca_dir = dir.string()});
  spindle::test::run([&] {
    auto pair = spindle::test::tls_pair(server_ctx, client_ctx);
    CHECK(pair.client.is_open());
  });
}
