// Kernel TLS offload: on this machine's kernel where it has the tls ULP (the
// test says why it skips otherwise), and everywhere with EmulatedKernel
// standing in for it, which checks what TlsStream hands the kernel.
#include <array>
#include <numeric>
#include <string>
#include <vector>

#include "context_state.hpp"
#include "emulated_kernel.hpp"
#include "tls_test_support.hpp"

namespace net = spindle::net;
namespace tls = spindle::tls;

namespace {

// Echo both ways with close_notify at the end, over a pair whose sends may
// go through the kernel.
void echo_and_close(spindle::test::TlsPair& pair) {
  auto& [client, server] = pair;
  std::vector<char> data(200'000);
  std::iota(data.begin(), data.end(), 0);
  auto echo = spindle::spawn([&] {
    std::vector<char> got(data.size());
    server.read_exact(got).value();
    server.write_all(std::string_view(got.data(), got.size())).value();
    server.shutdown(net::Shutdown::kWrite).value();  // close_notify: an alert record
  });
  REQUIRE(client.write_all(std::string_view(data.data(), data.size())).has_value());
  std::vector<char> back(data.size());
  REQUIRE(client.read_exact(back).has_value());
  const bool same = back == data;
  CHECK(same);
  std::array<char, 1> end;
  CHECK(client.read(end).value() == 0);  // the close_notify arrived
  echo.join().value();
}

}  // namespace

TEST_CASE("this kernel encrypts what a TLS stream sends, where it has the tls ULP", "[tls][ktls]") {
  const auto& kernel = tls::kernel_tls();
  if (!kernel.available)
    SPINDLE_SKIP("kernel TLS offload unavailable here: %s", kernel.reason.c_str());
  const auto server_ctx = spindle::test::server_context();
  const auto client_ctx = spindle::test::client_context();
  CHECK(server_ctx.kernel_offload());
  spindle::test::on_workers([=] {
    auto pair = spindle::test::tls_pair(server_ctx, client_ctx);
    CHECK(pair.client.kernel_offload());
    CHECK(pair.server.kernel_offload());
    echo_and_close(pair);
  });
}

TEST_CASE("the keys and records a TLS stream hands the kernel: TLS 1.3", "[tls][ktls]") {
  const auto server_ctx = spindle::test::server_context();
  const auto client_ctx = spindle::test::client_context();
  spindle::test::EmulatedKernel kernel;
  spindle::test::on_workers([&] {
    auto pair = spindle::test::tls_pair(server_ctx, client_ctx);
    CHECK(pair.client.version() == "TLSv1.3");
    CHECK(pair.client.kernel_offload());
    CHECK(pair.server.kernel_offload());
    echo_and_close(pair);
  });
  CHECK(kernel.keys_installed() == 3 * 2);  // each side, each run
  // The server's session tickets and close_notify: records of their own type.
  CHECK(kernel.control_records() >= 3 * 3);
}

TEST_CASE("the keys and records a TLS stream hands the kernel: TLS 1.2", "[tls][ktls]") {
  const auto server_ctx = spindle::test::server_context();
  const auto client_ctx = spindle::test::client_context();
  SSL_CTX_set_max_proto_version(client_ctx.state().ctx, TLS1_2_VERSION);
  spindle::test::EmulatedKernel kernel;
  spindle::test::on_workers(
      [&] {
        auto pair = spindle::test::tls_pair(server_ctx, client_ctx);
        CHECK(pair.client.version() == "TLSv1.2");
        CHECK(pair.client.kernel_offload());
        CHECK(pair.server.kernel_offload());
        echo_and_close(pair);
      },
      {1, 2});
  CHECK(kernel.keys_installed() == 2 * 2);
}

TEST_CASE("kernel offload off: records are encrypted in user space", "[tls][ktls]") {
  const auto server_ctx = spindle::test::server_context(
      spindle::test::certificates().server, {.kernel_offload = tls::KernelOffload::kOff});
  const auto client_ctx =
      spindle::test::client_context({.kernel_offload = tls::KernelOffload::kOff});
  spindle::test::EmulatedKernel kernel;
  CHECK_FALSE(server_ctx.kernel_offload());
  spindle::test::on_workers(
      [&] {
        auto pair = spindle::test::tls_pair(server_ctx, client_ctx);
        CHECK_FALSE(pair.client.kernel_offload());
        echo_and_close(pair);
      },
      {1});
  CHECK(kernel.keys_installed() == 0);
}
