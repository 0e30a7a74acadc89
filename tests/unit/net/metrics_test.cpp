// The network counters of the runtime metrics (runtime_*_connections_total,
// runtime_*_bandwidth_total) after a known echo exchange.
#include <catch2/catch.hpp>
#include <string>

#include "exposition.hpp"
#include "net_test_support.hpp"

namespace {
double metric(std::string_view name) {
  return spindle::test::metric_value(spindle::current_runtime().metrics_text(), name).value();
}
}  // namespace

TEST_CASE("network counters follow a known echo exchange", "[net][metrics]") {
  spindle::test::on_workers([] {
    auto [client, server] = spindle::test::connected_pair();
    CHECK(metric("runtime_inbound_connections_total") == 1);
    CHECK(metric("runtime_outbound_connections_total") == 1);
    REQUIRE(client.write_all(std::string_view("hello")));
    char buf[16];
    REQUIRE(server.read_exact(std::span(buf, 5)));
    REQUIRE(server.write_all(std::string_view(buf, 5)));
    REQUIRE(client.read_exact(std::span(buf, 5)));
    CHECK(std::string_view(buf, 5) == "hello");
    // Both ends are in this process: 5 bytes each way, counted once per end.
    CHECK(metric("runtime_outbound_bandwidth_total") == 10);
    CHECK(metric("runtime_inbound_bandwidth_total") == 10);
  });
}
