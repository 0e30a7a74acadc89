// spindle-http --tls-cert/--tls-key driven by real TLS clients: curl
// --cacert (keep-alive over TLS), openssl s_client (verification, a request
// by hand), and raw sockets for handshakes that fail or stall.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "certificates.hpp"
#include "process.hpp"
#include "skip.hpp"

using spindle::test::Client;
using spindle::test::count_of;
using spindle::test::Ms;
using spindle::test::run_program;
using spindle::test::Server;

namespace {

const std::string kHttp = SPINDLE_HTTP_BIN;

void need(const char* program) {
  if (!spindle::test::have_program(program)) SPINDLE_SKIP("%s is not installed", program);
}

std::vector<std::string> tls_flags(const spindle::test::CertificatePair& pair) {
  return {"--tls-cert", pair.certificate, "--tls-key", pair.key};
}

std::string https_url(const Server& server, const std::string& path = "/") {
  return "https://localhost:" + std::to_string(server.port()) + path;
}

// curl's --resolve: localhost:<port> is 127.0.0.1, whatever /etc/hosts says.
std::string resolve_flag(const Server& server) {
  return "localhost:" + std::to_string(server.port()) + ":127.0.0.1";
}

}  // namespace

TEST_CASE("curl --cacert: HTTPS GET / and keep-alive over TLS", "[integration][https]") {
  need("curl");
  const auto& certs = spindle::test::certificates();
  Server server(kHttp, tls_flags(certs.server));
  auto r = run_program(
      {"curl", "-sv", "--http1.1", "--max-time", "10", "--cacert", certs.ca, "--resolve",
       resolve_flag(server), https_url(server), https_url(server), https_url(server, "/missing")},
      Ms(20'000));
  REQUIRE(r.code == 0);
  CHECK(r.out == "Hello, World!Hello, World!Not Found\n");
  CHECK(count_of(r.err, "< HTTP/1.1 200 OK") == 2);
  CHECK(count_of(r.err, "Re-using existing connection") == 2);  // one connection for all three
  CHECK_THAT(r.err, Catch::Contains("SSL connection using TLSv1.3"));
  CHECK_THAT(r.err, Catch::Contains("ALPN: server accepted http/1.1"));
  CHECK(server.stop() == 0);
}

TEST_CASE("curl refuses spindle-http's certificate without the CA, and for another name",
          "[integration][https]") {
  need("curl");
  const auto& certs = spindle::test::certificates();
  Server server(kHttp, tls_flags(certs.wrong_host));
  // curl's exit code 60: the peer's certificate cannot be verified.
  auto unknown = run_program(
      {"curl", "-s", "--max-time", "10", "--resolve", resolve_flag(server), https_url(server)},
      Ms(20'000));
  CHECK(unknown.code == 60);
  auto wrong_name = run_program({"curl", "-s", "--max-time", "10", "--cacert", certs.ca,
                                 "--resolve", resolve_flag(server), https_url(server)},
                                Ms(20'000));
  CHECK(wrong_name.code == 60);
  CHECK(server.stop() == 0);
}

TEST_CASE("openssl s_client verifies spindle-http and sends a request by hand",
          "[integration][https]") {
  need("openssl");
  const auto& certs = spindle::test::certificates();
  Server server(kHttp, tls_flags(certs.server));
  const std::string request = (certs.dir.path() / "request.txt").string();
  std::ofstream(request) << "GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
  const std::string connect = "127.0.0.1:" + std::to_string(server.port());
  // -ign_eof: after the request, wait for the server to close.
  auto r = run_program(
      {"openssl", "s_client", "-connect", connect, "-servername", "localhost", "-verify_hostname",
       "localhost", "-CAfile", certs.ca, "-verify_return_error", "-ign_eof"},
      Ms(20'000), request);
  CHECK(r.code == 0);
  CHECK_THAT(r.out, Catch::Contains("Verify return code: 0 (ok)"));
  CHECK_THAT(r.out, Catch::Contains("HTTP/1.1 200 OK"));
  CHECK_THAT(r.out, Catch::Contains("Hello, World!"));
  CHECK_THAT(r.out, Catch::Contains("closed"));  // the server's close_notify, then its FIN
  CHECK(server.stop() == 0);
}

TEST_CASE("plain HTTP at spindle-http's TLS port closes that connection, and others are served",
          "[integration][https]") {
  need("curl");
  const auto& certs = spindle::test::certificates();
  Server server(kHttp, tls_flags(certs.server));
  Client plain(server.port());
  REQUIRE(plain.send_all("GET / HTTP/1.1\r\nHost: t\r\n\r\n"));
  bool eof = false;
  const std::string answer = plain.recv_all(&eof);
  CHECK(answer.find("HTTP/1.1") == std::string::npos);  // at most a TLS alert
  auto r = run_program({"curl", "-s", "--max-time", "10", "--cacert", certs.ca, "--resolve",
                        resolve_flag(server), https_url(server)},
                       Ms(20'000));
  CHECK(r.code == 0);
  CHECK(r.out == "Hello, World!");
  CHECK(server.stop() == 0);
}

TEST_CASE("a TLS client that stalls mid-handshake is closed after --tls-handshake-timeout",
          "[integration][https]") {
  const auto& certs = spindle::test::certificates();
  auto flags = tls_flags(certs.server);
  flags.insert(flags.end(), {"--tls-handshake-timeout", "0.2"});
  Server server(kHttp, flags);
  Client stalled(server.port());
  REQUIRE(stalled.send_all(std::string("\x16\x03\x01\x02\x00\x01", 6)));  // a ClientHello's start
  const auto t0 = std::chrono::steady_clock::now();
  bool eof = false;
  (void)stalled.recv_all(&eof);
  CHECK(eof);
  CHECK(std::chrono::steady_clock::now() - t0 >= Ms(150));
  CHECK(server.stop() == 0);
}

TEST_CASE("curl --cacert: --root files over HTTPS arrive byte-identical", "[integration][https]") {
  need("curl");
  const auto& certs = spindle::test::certificates();
  const auto root = certs.dir.path() / "root";
  std::filesystem::create_directories(root);
  std::string big(300'000, '\0');  // several records and several pieces of the file
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 31 % 251);
  std::ofstream(root / "big.bin", std::ios::binary) << big;
  auto flags = tls_flags(certs.server);
  flags.insert(flags.end(), {"--root", root.string()});
  Server server(kHttp, flags);
  const std::string out = (certs.dir.path() / "fetched.bin").string();
  auto r =
      run_program({"curl", "-s", "--max-time", "10", "--cacert", certs.ca, "--resolve",
                   resolve_flag(server), "-w", "%{http_code}", "-o", out,
                   https_url(server, "/big.bin"), "-o", "/dev/null", https_url(server, "/missing")},
                  Ms(20'000));
  CHECK(r.code == 0);
  CHECK(r.out == "200404");
  std::ifstream in(out, std::ios::binary);
  const std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const bool same = got == big;  // (Catch would print 300 KB)
  CHECK(same);
  CHECK(server.stop() == 0);
}

TEST_CASE("spindle-http names a TLS file it cannot load", "[integration][https]") {
  const auto& certs = spindle::test::certificates();
  const std::string missing = (certs.dir.path() / "missing.key").string();
  auto r = run_program({kHttp, "--listen", "127.0.0.1:0", "--tls-cert", certs.server.certificate,
                        "--tls-key", missing},
                       Ms(10'000));
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Catch::Contains("private_key_file \"" + missing + "\""));
  auto alone = run_program(
      {kHttp, "--listen", "127.0.0.1:0", "--tls-cert", certs.server.certificate}, Ms(10'000));
  CHECK(alone.code != 0);  // --tls-cert needs --tls-key
}
