// The log's commit window (Log::start): after a write that released several
// clients, the next round stays open for the clients still out, and closes as
// soon as every client waits, or one of those it waits for leaves.
#include <catch2/catch.hpp>
#include <chrono>
#include <mutex>
#include <optional>
#include <spindle/spindle.hpp>
#include <spindle/storage/storage.hpp>
#include <string>

#include "db.hpp"
#include "log.hpp"
#include "runtime_harness.hpp"
#include "temp_dir.hpp"

namespace {

using namespace std::chrono_literals;

constexpr auto kWindow = 1s;

}  // namespace

// One worker, so that the fibers of a round run in the order they are spawned:
// both writers of a round append before the committer first runs.
TEST_CASE("the commit window holds a write for clients still out, and closes once all wait",
          "[kv]") {
  spindle::test::TempDir dir;
  spindle::test::run(
      [&] {
        auto storage = spindle::storage::Storage::open_directory(dir.path().string());
        REQUIRE(storage);
        kv::Db db;
        auto opened = kv::Log::open(*storage, kv::FsyncPolicy::kNo, db, false);
        REQUIRE(opened);
        kv::Log& log = **opened;
        log.start(kWindow);
        // Appends a record after `delay`; how long from the append until the
        // log had written it.
        auto writer = [&](std::chrono::nanoseconds delay = {}) {
          return spindle::spawn([&, delay] {
            if (delay.count() > 0) REQUIRE(spindle::this_fiber::sleep_for(delay));
            const auto began = spindle::Clock::now();
            std::uint64_t seq;
            {
              std::lock_guard<spindle::Mutex> lock(db.mutex());
              seq = log.append_set("k", "v", 0);
            }
            REQUIRE(log.wait(seq));
            return spindle::Clock::now() - began;
          });
        };
        {  // the clients end before the log does
          kv::Log::Client a(log), b(log);
          std::optional<kv::Log::Client> c(std::in_place, log);

          // Two clients in one write, with no window before it (none released
          // two yet).
          {
            auto x = writer(), y = writer();
            CHECK(x.get() < kWindow);
            CHECK(y.get() < kWindow);
          }
          // Alone, with two of three clients out: held for the whole window.
          CHECK(writer().get() >= kWindow);
          // After a write that released one: no window.
          {
            auto x = writer(), y = writer();
            CHECK(x.get() < kWindow);
            CHECK(y.get() < kWindow);
          }
          // Two clients of two, the second a little later: the window closes
          // when it waits.
          c.reset();
          {
            auto x = writer(), y = writer(20ms);
            CHECK(x.get() < kWindow);
            CHECK(y.get() < kWindow);
          }
          // Two of three wait; the third leaves: the window closes.
          c.emplace(log);
          {
            auto x = writer(), y = writer();
            auto leave = spindle::spawn([&] {
              REQUIRE(spindle::this_fiber::sleep_for(20ms));
              c.reset();
            });
            CHECK(x.get() < kWindow);
            CHECK(y.get() < kWindow);
            leave.get();
          }
        }
        REQUIRE(log.close());
        opened->reset();
        // Every write landed: a replay finds the key.
        kv::Db replayed;
        auto reopened = kv::Log::open(*storage, kv::FsyncPolicy::kNo, replayed, false);
        REQUIRE(reopened);
        std::lock_guard<spindle::Mutex> lock(replayed.mutex());
        CHECK(replayed.size() == 1);
        REQUIRE((*reopened)->close());
      },
      spindle::Config{.workers = 1});
}
