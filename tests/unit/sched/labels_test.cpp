// Context labels and attributes: child(), with_attribute(), what spawned
// fibers inherit, and validation.
#include <atomic>
#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>

#include "exposition.hpp"
#include "runtime_harness.hpp"

using Catch::Matchers::Contains;
using spindle::test::metric_value;
namespace tf = spindle::this_fiber;

namespace {

std::string fiber_name() { return spindle::detail::current_fiber()->name; }

}  // namespace

TEST_CASE("child joins labels with an underscore and keeps the attributes", "[labels]") {
  spindle::test::on_workers(
      [] {
        auto root = tf::context();
        CHECK(root.label().empty());
        CHECK(root.attributes().empty());
        auto a = root.child("a").with_attribute("k", "v").child("b2").child("c_d");
        CHECK(a.label() == "a_b2_c_d");
        REQUIRE(a.attributes().size() == 1);
        CHECK(a.attributes()[0].first == "k");
        CHECK(a.attributes()[0].second == "v");
        CHECK(root.label().empty());  // the parent is unchanged
      },
      {1});
}

TEST_CASE("with_attribute sorts keys and replaces a key added again", "[labels]") {
  spindle::test::on_workers(
      [] {
        auto c = tf::context()
                     .with_attribute("zeta", 1)
                     .with_attribute("alpha", 2.5)
                     .with_attribute("mid", true)
                     .with_attribute("zeta", std::string("two"));
        REQUIRE(c.attributes().size() == 3);
        CHECK(c.attributes()[0] == std::pair<std::string, std::string>("alpha", "2.5"));
        CHECK(c.attributes()[1] == std::pair<std::string, std::string>("mid", "true"));
        CHECK(c.attributes()[2] == std::pair<std::string, std::string>("zeta", "two"));
        CHECK(c.label().empty());  // attributes do not change the path
      },
      {1});
}

TEST_CASE("a fiber spawned through a labelled context is named by the label path", "[labels]") {
  spindle::test::on_workers([] {
    auto ctx = tf::context().child("net").child("peer").with_attribute("id", 7);
    auto named = ctx.spawn([] {
      auto inner = tf::context();
      CHECK(inner.label() == "net_peer");
      REQUIRE(inner.attributes().size() == 1);
      CHECK(inner.attributes()[0].second == "7");
      // Its own unnamed spawns inherit the labels too.
      return spindle::spawn([] { return fiber_name(); }).join().value() + "|" + fiber_name();
    });
    CHECK(named.join().value() == "net_peer|net_peer");
    // An explicit name wins over the label path.
    CHECK(ctx.spawn("explicit", [] { return fiber_name(); }).join().value() == "explicit");
    // Both counted under their names.
    const auto text = spindle::current_runtime().metrics_text();
    CHECK(metric_value(text, "runtime_tasks_spawned_total", {{"name", "net_peer"}}) == 2);
    CHECK(metric_value(text, "runtime_tasks_spawned_total", {{"name", "explicit"}}) == 1);
  });
}

TEST_CASE("child creates no supervision node of its own", "[labels]") {
  spindle::test::on_workers([] {
    spindle::Event go;
    // A context of a task that ends: spawns through its child are refused
    // just like spawns through it.
    auto [ctx, child] = spindle::spawn([] {
                          auto c = tf::context();
                          return std::pair(c, c.child("sub"));
                        })
                            .join()
                            .value();
    CHECK(ctx.aborted());
    CHECK(child.aborted());
    CHECK(child.spawn([] {}).join().error() == spindle::errc::aborted);
    // A live one: aborting the parent's task aborts the fiber spawned
    // through its child context.
    std::atomic<int> waited{-1};  // the grandchild's wait: 1 woken, 0 aborted
    auto parent = spindle::spawn([&go, &waited] {
      auto sub = tf::context().child("sub");
      auto h = sub.spawn([&go, &waited] { waited = go.wait() ? 1 : 0; });
      (void)h.join();
    });
    (void)tf::sleep_for(spindle::test::kSettle);
    parent.abort();
    CHECK(parent.join().error() == spindle::errc::aborted);
    CHECK(spindle::test::eventually([&] { return waited.load() != -1; }));
    CHECK(waited.load() == 0);
    go.set();
  });
}

TEST_CASE("invalid labels and attribute keys are rejected with their text", "[labels]") {
  spindle::test::on_workers(
      [] {
        auto root = tf::context();
        CHECK_THROWS_AS(root.child(""), std::invalid_argument);
        CHECK_THROWS_WITH(root.child("1abc"), Contains("'1abc'"));
        CHECK_THROWS_WITH(root.child("_x"), Contains("'_x'"));
        CHECK_THROWS_WITH(root.child("a-b"), Contains("'a-b'"));
        CHECK_THROWS_WITH(root.child("runtime"), Contains("reserved"));
        CHECK_THROWS_WITH(root.child("runtime_x"), Contains("reserved"));
        CHECK_NOTHROW(root.child("app").child("runtime"));  // only the first label is reserved
        CHECK_NOTHROW(root.child("runtimes"));
        CHECK_THROWS_WITH(root.with_attribute("9k", 1), Contains("'9k'"));
        CHECK_THROWS_WITH(root.with_attribute("a b", 1), Contains("'a b'"));
        CHECK_THROWS_AS(root.with_attribute("", 1), std::invalid_argument);
        CHECK_THROWS_WITH(root.register_counter("bad-name", "h"), Contains("'bad-name'"));
        CHECK_THROWS_WITH(root.register_gauge("runtime_mine", "h"), Contains("reserved"));
        CHECK_NOTHROW(root.child("app").register_gauge("runtime_mine", "h"));
      },
      {1});
}
