// TaskGroup: every fiber joined before the scope ends; the first failure
// (a throw or a returned error) aborts the rest and is what wait() returns.
//
// Assertions run on the root fiber only: children record what they saw and
// the root checks it after the group is joined.
#include <atomic>
#include <catch2/catch.hpp>
#include <stdexcept>
#include <system_error>
#include <utility>
#include <vector>

#include "runtime_harness.hpp"

using spindle::errc;
using spindle::Event;
using spindle::Result;
using spindle::TaskGroup;
using spindle::test::eventually;

namespace {

// Counts one end when the closure holding it is destroyed, which happens
// whether the fiber's body ran or was discarded unrun (moved-from copies
// count nothing).
class EndToken {
 public:
  explicit EndToken(std::atomic<int>& ended) noexcept : ended_(&ended) {}
  EndToken(EndToken&& o) noexcept : ended_(std::exchange(o.ended_, nullptr)) {}
  EndToken(const EndToken&) = delete;
  EndToken& operator=(const EndToken&) = delete;
  EndToken& operator=(EndToken&&) = delete;
  ~EndToken() {
    if (ended_) ended_->fetch_add(1);
  }

 private:
  std::atomic<int>* ended_;
};

// Fibers that block on an event nobody sets and record how the wait ended.
struct Blockers {
  static constexpr int kCount = 8;
  Event never;
  std::atomic<int> started{0};
  std::atomic<int> saw_aborted{0};

  void spawn_into(TaskGroup& g) {
    for (int i = 0; i < kCount; ++i) {
      g.spawn([this]() -> Result<void> {
        started++;
        auto r = never.wait();
        if (!r && r.error() == errc::aborted) saw_aborted++;
        return r;
      });
    }
  }
  bool all_started() const { return started.load() == kCount; }
};

spindle::Config quiet_catching() {
  spindle::Config c;
  c.catch_exceptions = true;
  c.on_log = [](spindle::LogLevel, std::string_view) {};
  return c;
}

}  // namespace

TEST_CASE("task group: wait returns success once every fiber has ended", "[task_group]") {
  spindle::test::on_workers([] {
    constexpr int kEach = 50;
    std::atomic<int> ran{0};
    TaskGroup g;
    for (int i = 0; i < kEach; ++i) {
      g.spawn([&] { ran++; });
      g.spawn([&]() -> Result<int> {
        ran++;
        return 7;
      });
      g.spawn([&] {
        ran++;
        return std::error_code();
      });
    }
    CHECK(g.wait().has_value());
    CHECK(ran.load() == 3 * kEach);
    CHECK(g.size() == 0);
    CHECK(g.exception() == nullptr);
    // An empty group waits at once.
    CHECK(g.wait().has_value());
  });
}

TEST_CASE("task group: the first failure aborts the others and wait returns it", "[task_group]") {
  spindle::test::on_workers([] {
    Blockers blockers;
    std::atomic<bool> late_ran{false};
    TaskGroup g;
    blockers.spawn_into(g);
    REQUIRE(eventually([&] { return blockers.all_started(); }));
    const auto failure = std::make_error_code(std::errc::invalid_argument);
    g.spawn([&]() -> Result<void> { return spindle::failure(failure); });
    // At once, not when the owner comes to wait.
    REQUIRE(eventually([&] { return blockers.saw_aborted.load() == Blockers::kCount; }));
    CHECK(g.wait().error() == failure);
    CHECK(blockers.saw_aborted.load() == Blockers::kCount);
    CHECK(g.exception() == nullptr);
    // The group stays failed: a later spawn never runs, and wait says so again.
    g.spawn([&] { late_ran = true; });
    CHECK(g.wait().error() == failure);
    CHECK_FALSE(late_ran.load());
  });
}

TEST_CASE("task group: a throw fails it with errc::exited and keeps the exception",
          "[task_group]") {
  spindle::test::on_workers(
      [] {
        Blockers blockers;
        TaskGroup g;
        blockers.spawn_into(g);
        REQUIRE(eventually([&] { return blockers.all_started(); }));
        g.spawn([] { throw std::runtime_error("boom"); });
        CHECK(g.wait().error() == errc::exited);
        CHECK(blockers.saw_aborted.load() == Blockers::kCount);
        REQUIRE(g.exception() != nullptr);
        CHECK_THROWS_WITH(std::rethrow_exception(g.exception()), "boom");
        CHECK_THROWS_AS(g.wait_or_throw(), std::runtime_error);
      },
      {1, 2, 4}, quiet_catching());
}

TEST_CASE("task group: a returned error is thrown by wait_or_throw as std::system_error",
          "[task_group]") {
  spindle::test::on_workers([] {
    TaskGroup g;
    g.spawn([] { return std::make_error_code(std::errc::no_space_on_device); });
    try {
      g.wait_or_throw();
      FAIL("wait_or_throw returned");
    } catch (const std::system_error& e) {
      CHECK(e.code() == std::errc::no_space_on_device);
    }
  });
}

TEST_CASE("task group: of several failing at once, wait returns one of their errors",
          "[task_group]") {
  spindle::test::on_workers([] {
    constexpr int kFailing = 16;
    Event go;
    std::atomic<int> started{0};
    TaskGroup g;
    for (int i = 1; i <= kFailing; ++i) {
      g.spawn([&, i]() -> std::error_code {
        started++;
        if (auto r = go.wait(); !r) return r.error();
        return {i, std::generic_category()};
      });
    }
    REQUIRE(eventually([&] { return started.load() == kFailing; }));
    go.set();
    const auto r = g.wait();
    REQUIRE_FALSE(r.has_value());
    CHECK(r.error().category() == std::generic_category());
    CHECK(r.error().value() >= 1);
    CHECK(r.error().value() <= kFailing);
  });
}

TEST_CASE("task group: aborting its owner aborts the group and wait returns errc::aborted",
          "[task_group]") {
  spindle::test::on_workers([] {
    Blockers blockers;
    std::atomic<bool> late_ran{false};
    Result<void> waited;
    Result<void> after_abort;
    auto owner = spindle::spawn([&] {
      TaskGroup g;
      blockers.spawn_into(g);
      waited = g.wait();
      // The owner is aborted: the group refuses further spawns.
      g.spawn([&] { late_ran = true; });
      after_abort = g.wait();
    });
    REQUIRE(eventually([&] { return blockers.all_started(); }));
    owner.abort();
    CHECK(owner.join().error() == errc::aborted);
    CHECK(waited.error() == errc::aborted);
    CHECK(after_abort.error() == errc::aborted);
    CHECK(blockers.saw_aborted.load() == Blockers::kCount);
    CHECK_FALSE(late_ran.load());
  });
}

TEST_CASE("task group: a group made in an aborted fiber runs nothing", "[task_group]") {
  spindle::test::on_workers([] {
    std::atomic<bool> ran{false};
    std::atomic<bool> started{false};
    Result<void> waited;
    Event never;
    auto owner = spindle::spawn([&] {
      started = true;
      (void)never.wait();  // until aborted
      TaskGroup g;
      g.spawn([&] { ran = true; });
      waited = g.wait();
    });
    REQUIRE(eventually([&] { return started.load(); }));
    owner.abort();
    (void)owner.join();
    CHECK(waited.error() == errc::aborted);
    CHECK_FALSE(ran.load());
  });
}

TEST_CASE("task group: the destructor without wait aborts and joins every fiber", "[task_group]") {
  spindle::test::on_workers([] {
    constexpr int kQuick = 100;
    std::atomic<int> ended{0};
    Blockers blockers;
    {
      TaskGroup g;
      blockers.spawn_into(g);
      // Many of these have not started when the scope ends: they never run,
      // and are joined all the same.
      for (int i = 0; i < kQuick; ++i) g.spawn([token = EndToken(ended)] {});
      REQUIRE(eventually([&] { return blockers.all_started(); }));
    }
    CHECK(ended.load() == kQuick);
    CHECK(blockers.saw_aborted.load() == Blockers::kCount);
  });
}

TEST_CASE(
    "task group: a destructor run by an exception joins every fiber, and the "
    "exception goes on",
    "[task_group]") {
  spindle::test::on_workers([] {
    constexpr int kQuick = 20;
    std::atomic<int> ended{0};
    Blockers blockers;
    bool caught = false;
    try {
      TaskGroup g;
      blockers.spawn_into(g);
      for (int i = 0; i < kQuick; ++i) g.spawn([token = EndToken(ended)] {});
      REQUIRE(eventually([&] { return blockers.all_started(); }));
      throw std::logic_error("scope left by a throw");
    } catch (const std::logic_error&) {
      caught = true;
    }
    CHECK(caught);
    CHECK(ended.load() == kQuick);
    CHECK(blockers.saw_aborted.load() == Blockers::kCount);
  });
}
