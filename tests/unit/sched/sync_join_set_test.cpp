// JoinSet<T>: results in the order the fibers finish, abort_all, the
// destructor's abort and join, and a large set drained completely.
//
// Assertions run on the root fiber (or the main thread) only: children
// record what they saw and the root checks it after joining them.
#include <atomic>
#include <catch2/catch.hpp>
#include <memory>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "runtime_harness.hpp"

using spindle::errc;
using spindle::Event;
using spindle::JoinSet;
using spindle::Result;
using spindle::test::eventually;

namespace {

#if defined(SPINDLE_TSAN)
constexpr int kLargeSet = 2'000;
#else
constexpr int kLargeSet = 10'000;
#endif

// Fibers of a JoinSet<int> that block on an event nobody sets and record how
// the wait ended.
struct Blockers {
  static constexpr int kCount = 8;
  Event never;
  std::atomic<int> started{0};
  std::atomic<int> saw_aborted{0};

  void spawn_into(JoinSet<int>& set) {
    for (int i = 0; i < kCount; ++i) {
      set.spawn([this] {
        started++;
        auto r = never.wait();
        if (!r && r.error() == errc::aborted) saw_aborted++;
        return 0;
      });
    }
  }
  bool all_started() const { return started.load() == kCount; }
};

}  // namespace

TEST_CASE("join set: join_next returns results in the order the fibers finish, not spawn order",
          "[join_set]") {
  spindle::test::on_workers([] {
    constexpr int kFibers = 6;
    std::vector<std::unique_ptr<Event>> go;
    for (int i = 0; i < kFibers; ++i) go.push_back(std::make_unique<Event>());
    JoinSet<int> set;
    for (int i = 0; i < kFibers; ++i) {
      set.spawn([&, i]() -> int {
        (void)go[static_cast<std::size_t>(i)]->wait();
        return i;
      });
    }
    CHECK(set.size() == kFibers);
    // Each fiber is released only once the one before it has been joined.
    for (int i : {3, 5, 0, 4, 1, 2}) {
      go[static_cast<std::size_t>(i)]->set();
      auto r = set.join_next();
      REQUIRE(r.has_value());
      CHECK(r->value() == i);
    }
    CHECK(set.empty());
  });
}

TEST_CASE("join set: an empty set's join_next and try_join_next return nullopt at once",
          "[join_set]") {
  spindle::test::on_workers([] {
    JoinSet<int> set;
    CHECK(set.empty());
    CHECK_FALSE(set.join_next().has_value());
    CHECK_FALSE(set.try_join_next().has_value());
    set.spawn([] { return 1; });
    CHECK(set.join_next()->value() == 1);
    CHECK_FALSE(set.join_next().has_value());
  });
}

TEST_CASE("join set: try_join_next never blocks and returns a fiber once it has ended",
          "[join_set]") {
  spindle::test::on_workers([] {
    Event go;
    JoinSet<int> set;
    set.spawn([&] {
      (void)go.wait();
      return 42;
    });
    CHECK_FALSE(set.try_join_next().has_value());
    CHECK(set.size() == 1);
    go.set();
    std::optional<Result<int>> r;
    REQUIRE(eventually([&] { return (r = set.try_join_next()).has_value(); }));
    CHECK(r->value() == 42);
    CHECK(set.empty());
  });
}

TEST_CASE("join set: a set of many fibers drains with every result accounted for", "[join_set]") {
  spindle::test::on_workers([] {
    JoinSet<int> set;
    for (int i = 0; i < kLargeSet; ++i) set.spawn([i] { return i; });
    CHECK(set.size() == static_cast<std::size_t>(kLargeSet));
    std::vector<int> seen(static_cast<std::size_t>(kLargeSet), 0);
    int joined = 0;
    int bad = 0;
    while (auto r = set.join_next()) {
      ++joined;
      if (!*r || **r < 0 || **r >= kLargeSet) {
        ++bad;
        continue;
      }
      ++seen[static_cast<std::size_t>(**r)];
    }
    CHECK(joined == kLargeSet);
    CHECK(bad == 0);
    int once = 0;
    for (int n : seen) once += n == 1 ? 1 : 0;
    CHECK(once == kLargeSet);
    CHECK(set.empty());
  });
}

TEST_CASE("join set: a throw joins as errc::exited and an unrun fiber as errc::aborted",
          "[join_set]") {
  spindle::Config c;
  c.catch_exceptions = true;
  c.on_log = [](spindle::LogLevel, std::string_view) {};
  spindle::test::on_workers(
      [] {
        JoinSet<int> set;
        set.spawn([]() -> int { throw std::runtime_error("boom"); });
        CHECK(set.join_next()->error() == errc::exited);
        // A set under an ended (so aborted) fiber: the spawn is refused, the
        // callable never runs, and the fiber still joins.
        std::optional<spindle::Context> ended;
        std::atomic<bool> have{false};
        Event never;
        auto parent = spindle::spawn([&] {
          ended = spindle::this_fiber::context();
          have = true;
          (void)never.wait();
        });
        REQUIRE(eventually([&] { return have.load(); }));
        parent.abort();
        (void)parent.join();
        std::atomic<bool> ran{false};
        JoinSet<int> refused(*ended);
        refused.spawn([&] {
          ran = true;
          return 1;
        });
        CHECK(refused.size() == 1);
        CHECK(refused.join_next()->error() == errc::aborted);
        CHECK_FALSE(ran.load());
      },
      {1, 2, 4}, c);
}

TEST_CASE("join set: abort_all aborts every fiber, which joins as errc::aborted", "[join_set]") {
  spindle::test::on_workers([] {
    Blockers blockers;
    JoinSet<int> set;
    blockers.spawn_into(set);
    REQUIRE(eventually([&] { return blockers.all_started(); }));
    set.abort_all();
    CHECK(set.size() == Blockers::kCount);
    int aborted = 0;
    while (auto r = set.join_next()) aborted += (!*r && r->error() == errc::aborted) ? 1 : 0;
    CHECK(aborted == Blockers::kCount);
    CHECK(blockers.saw_aborted.load() == Blockers::kCount);
    // A fiber spawned afterwards runs.
    set.spawn([] { return 5; });
    CHECK(set.join_next()->value() == 5);
  });
}

TEST_CASE("join set: the destructor aborts the fibers left and waits for them", "[join_set]") {
  spindle::test::on_workers([] {
    Blockers blockers;
    {
      JoinSet<int> set;
      blockers.spawn_into(set);
      for (int i = 0; i < 100; ++i) set.spawn([i] { return i; });
      REQUIRE(eventually([&] { return blockers.all_started(); }));
    }
    CHECK(blockers.saw_aborted.load() == Blockers::kCount);
  });
}

TEST_CASE("join set: join_next in an aborted owner aborts the set and drains it", "[join_set]") {
  spindle::test::on_workers([] {
    Blockers blockers;
    int joined = 0;
    int aborted = 0;
    auto owner = spindle::spawn([&] {
      JoinSet<int> set;
      blockers.spawn_into(set);
      while (auto r = set.join_next()) {
        ++joined;
        aborted += (!*r && r->error() == errc::aborted) ? 1 : 0;
      }
    });
    REQUIRE(eventually([&] { return blockers.all_started(); }));
    owner.abort();
    (void)owner.join();
    CHECK(joined == Blockers::kCount);
    CHECK(aborted == Blockers::kCount);
    CHECK(blockers.saw_aborted.load() == Blockers::kCount);
  });
}

TEST_CASE("join set: a set made from a Context is joined from a plain thread", "[join_set]") {
  spindle::test::on_workers([] {
    constexpr int kFibers = 50;
    auto ctx = spindle::this_fiber::context();
    spindle::WaitGroup done(1);
    int sum = 0;
    int joined = 0;
    std::thread t([&] {
      JoinSet<int> set(ctx);
      for (int i = 0; i < kFibers; ++i) set.spawn([i] { return i; });
      while (auto r = set.join_next()) {
        ++joined;
        sum += r->value_or(-1000);
      }
      done.done();
    });
    CHECK(done.wait().has_value());
    t.join();
    CHECK(joined == kFibers);
    CHECK(sum == kFibers * (kFibers - 1) / 2);
  });
}
