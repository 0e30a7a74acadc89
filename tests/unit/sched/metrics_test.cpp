// Runtime and user metrics, read back through metrics_text() and parsed.
#include <atomic>
#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

#include "exposition.hpp"
#include "runtime_harness.hpp"

using namespace std::chrono_literals;
using spindle::errc;
using spindle::test::metric_value;
namespace tf = spindle::this_fiber;

namespace {

std::string scrape() { return spindle::current_runtime().metrics_text(); }

// runtime_tasks_* of name `name`, kind task, execution `execution`.
std::optional<double> tasks(std::string_view metric, const std::string& name,
                            const std::string& execution = "shared") {
  return metric_value(scrape(), metric,
                      {{"name", name}, {"kind", "task"}, {"execution", execution}});
}

}  // namespace

TEST_CASE("N spawns of a named fiber count N spawned and none running after the joins",
          "[metrics]") {
  spindle::test::on_workers([] {
    constexpr int kN = 25;
    std::vector<spindle::JoinHandle<void>> hs;
    for (int i = 0; i < kN; ++i) hs.push_back(spindle::spawn("x", [] { (void)tf::yield(); }));
    for (auto& h : hs) REQUIRE(h.join());
    CHECK(tasks("runtime_tasks_spawned_total", "x") == kN);
    CHECK(tasks("runtime_tasks_running", "x") == 0);
    // Unnamed fibers are the series with name "".
    auto h = spindle::spawn([] {});
    REQUIRE(h.join());
    CHECK(tasks("runtime_tasks_spawned_total", "") >= 1);
  });
}

TEST_CASE("a parked fiber counts as running until it ends", "[metrics]") {
  spindle::test::on_workers([] {
    spindle::Event go;
    auto h = spindle::spawn("parked", [&] { REQUIRE(go.wait()); });
    CHECK(tasks("runtime_tasks_running", "parked") == 1);
    (void)tf::sleep_for(spindle::test::kSettle);  // parked by now, most likely
    CHECK(tasks("runtime_tasks_running", "parked") == 1);
    go.set();
    REQUIRE(h.join());
    CHECK(tasks("runtime_tasks_running", "parked") == 0);
    CHECK(tasks("runtime_tasks_spawned_total", "parked") == 1);
  });
}

TEST_CASE("a refused spawn counts as spawned and is finished at once", "[metrics]") {
  spindle::test::on_workers([] {
    auto ctx = spindle::spawn([] { return tf::context(); }).join().value();
    REQUIRE(ctx.aborted());  // its task ended
    auto h = ctx.spawn("late", [] {});
    CHECK(h.join().error() == errc::aborted);
    CHECK(tasks("runtime_tasks_spawned_total", "late") == 1);
    CHECK(tasks("runtime_tasks_running", "late") == 0);
  });
}

TEST_CASE("runtime_io_backend_info names the runtime's I/O backend", "[metrics]") {
  spindle::test::on_workers([] {
    const auto text = scrape();
    const std::string backend(spindle::current_runtime().io_backend());
    CHECK((backend == "io_uring" || backend == "epoll"));
    CHECK(metric_value(text, "runtime_io_backend_info", {{"backend", backend}}) == 1);
    CHECK_FALSE(metric_value(text, "runtime_io_backend_info",
                             {{"backend", backend == "epoll" ? "io_uring" : "epoll"}}));
  });
}

TEST_CASE("the root and the dedicated and blocking executions have their own series", "[metrics]") {
  spindle::test::on_workers([] {
    const auto text = scrape();
    CHECK(metric_value(text, "runtime_tasks_spawned_total",
                       {{"name", "root"}, {"kind", "root"}, {"execution", "shared"}}) == 1);
    CHECK(metric_value(text, "runtime_tasks_running",
                       {{"name", "root"}, {"kind", "root"}, {"execution", "shared"}}) == 1);

    REQUIRE(spindle::spawn_dedicated([] {}, "ded").join());
    CHECK(tasks("runtime_tasks_spawned_total", "ded", "dedicated") == 1);
    CHECK(tasks("runtime_tasks_running", "ded", "dedicated") == 0);

    auto pool = tf::context().child("pool");
    REQUIRE(pool.spawn_blocking([] { return 1; }).join() == 1);
    REQUIRE(pool.spawn_blocking([] { return 2; }).join() == 2);
    CHECK(tasks("runtime_tasks_spawned_total", "pool", "blocking") == 2);
    CHECK(tasks("runtime_tasks_running", "pool", "blocking") == 0);
  });
}

TEST_CASE("spawns from a plain thread are counted", "[metrics]") {
  spindle::test::on_workers([] {
    auto rt = spindle::current_runtime();
    auto h = spindle::spawn_blocking([rt] {
      std::vector<spindle::JoinHandle<void>> hs;
      for (int i = 0; i < 5; ++i) hs.push_back(rt.spawn([] {}));
      for (auto& j : hs) (void)j.join();
    });
    REQUIRE(h.join());
    CHECK(tasks("runtime_tasks_spawned_total", "") >= 5);
    CHECK(tasks("runtime_tasks_running", "") == 0);
  });
}

TEST_CASE("Runtime metrics_text is empty before a run and keeps the final values after it",
          "[metrics]") {
  spindle::Runtime rt(spindle::Config{.workers = 2});
  CHECK(rt.metrics_text().empty());
  std::atomic<bool> seen_live{false};
  rt.run([&] {
    std::thread reader([&] {
      // From a plain thread while the runtime runs.
      auto v = metric_value(rt.metrics_text(), "runtime_tasks_running", {{"kind", "root"}});
      seen_live = v == 1.0;
    });
    (void)tf::sleep_for(10ms);
    auto h = spindle::spawn_blocking([&] { reader.join(); });
    REQUIRE(h.join());
    for (int i = 0; i < 3; ++i) REQUIRE(spindle::spawn("after", [] {}).join());
  });
  CHECK(seen_live);
  const auto text = rt.metrics_text();
  CHECK(metric_value(text, "runtime_tasks_spawned_total", {{"name", "after"}}) == 3);
  CHECK(metric_value(text, "runtime_tasks_running", {{"kind", "root"}}) == 0);
  CHECK(metric_value(text, "runtime_pending_operations") == 0);
}

TEST_CASE("a user counter carries the label path and the attributes", "[metrics][labels]") {
  spindle::test::on_workers([] {
    auto ctx = tf::context().child("consensus").with_attribute("epoch", 5);
    auto& votes = ctx.register_counter("votes", "Votes seen.");
    votes.Increment();
    votes.Increment(2);
    CHECK(&ctx.register_counter("votes", "Votes seen.") == &votes);  // the same metric
    auto& other = tf::context()
                      .child("consensus")
                      .with_attribute("epoch", 6)
                      .register_counter("votes", "Votes seen.");
    CHECK(&other != &votes);
    other.Increment();
    const auto text = scrape();
    CHECK(metric_value(text, "consensus_votes_total", {{"epoch", "5"}}) == 3);
    CHECK(metric_value(text, "consensus_votes_total", {{"epoch", "6"}}) == 1);
    CHECK(text.find("# TYPE consensus_votes_total counter") != std::string::npos);
  });
}

TEST_CASE("nested labels and root metrics name gauges and histograms", "[metrics][labels]") {
  spindle::test::on_workers([] {
    auto ctx = tf::context().child("p2p").child("peers").with_attribute("region", "eu");
    ctx.register_gauge("connected", "Peers connected.").Set(7);
    auto& h = ctx.register_histogram("rtt_seconds", "Round trips.", {0.1, 1.0});
    h.Observe(0.05);
    h.Observe(0.5);
    tf::context().register_counter("requests_total", "At the root.").Increment(4);
    const auto text = scrape();
    CHECK(metric_value(text, "p2p_peers_connected", {{"region", "eu"}}) == 7);
    CHECK(metric_value(text, "p2p_peers_rtt_seconds_count", {{"region", "eu"}}) == 2);
    CHECK(metric_value(text, "p2p_peers_rtt_seconds_bucket", {{"region", "eu"}, {"le", "0.1"}}) ==
          1);
    CHECK(metric_value(text, "requests_total") == 4);  // no second _total
  });
}

TEST_CASE("the global queue depth counts spawns from a plain thread that no worker took yet",
          "[metrics]") {
  spindle::test::on_workers(
      [] {
        auto rt = spindle::current_runtime();
        std::vector<spindle::JoinHandle<void>> hs;
        // The only worker runs this root and does not park while the thread
        // spawns, so every spawn waits in the global queue.
        std::thread t([&] {
          for (int i = 0; i < 40; ++i) hs.push_back(rt.spawn([] {}));
        });
        t.join();
        CHECK(metric_value(scrape(), "runtime_global_queue_depth") == 40);
        for (auto& h : hs) REQUIRE(h.join());
        CHECK(metric_value(scrape(), "runtime_global_queue_depth") == 0);
      },
      {1});
}

TEST_CASE("pending operations count an accept in flight", "[metrics]") {
  spindle::test::on_workers([] {
    auto listener =
        spindle::net::TcpListener::bind(spindle::net::SocketAddress::loopback_v4()).value();
    auto h = spindle::spawn([&] { return listener.accept().error(); });
    CHECK(spindle::test::eventually(
        [] { return metric_value(scrape(), "runtime_pending_operations") >= 1.0; }));
    h.abort();
    CHECK(h.join().error() == errc::aborted);
    CHECK(spindle::test::eventually(
        [] { return metric_value(scrape(), "runtime_pending_operations") == 0.0; }));
  });
}

TEST_CASE("worker parks and steals are exposed per worker", "[metrics]") {
  spindle::test::on_workers([] {
    (void)tf::sleep_for(5ms);  // worker 0 has nothing else to do: it parks
    const auto text = scrape();
    CHECK(metric_value(text, "runtime_worker_parks_total", {{"worker", "0"}}) >= 1);
    const auto n = spindle::current_config().workers;
    CHECK(metric_value(text, "runtime_worker_parks_total", {{"worker", std::to_string(n - 1)}})
              .has_value());
    CHECK_FALSE(metric_value(text, "runtime_worker_parks_total", {{"worker", std::to_string(n)}})
                    .has_value());
    CHECK(metric_value(text, "runtime_steals_total") >= 0);
    CHECK(metric_value(text, "runtime_io_hand_overs_total") >= 0);
    CHECK(metric_value(text, "runtime_pooled_receive_fallbacks_total") == 0);
  });
}
