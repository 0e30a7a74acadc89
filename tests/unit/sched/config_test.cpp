#include <dirent.h>

#include <catch2/catch.hpp>
#include <spindle/spindle.hpp>
#include <stdexcept>
#include <string>

using spindle::Config;

namespace {

std::size_t thread_count() {
  std::size_t n = 0;
  if (DIR* d = ::opendir("/proc/self/task")) {
    while (auto* e = ::readdir(d)) n += e->d_name[0] != '.';
    ::closedir(d);
  }
  return n;
}

// Constructing a Runtime with `c` throws invalid_argument whose message names `setting`.
void require_rejected(Config c, const std::string& setting) {
  INFO("setting " << setting);
  const std::size_t threads = thread_count();
  try {
    spindle::Runtime rt(c);
    FAIL("accepted an invalid " << setting);
  } catch (const std::invalid_argument& e) {
    CHECK_THAT(e.what(), Catch::Contains(setting));
  }
  CHECK(thread_count() == threads);  // rejected before any thread was made
}

}  // namespace

TEST_CASE("invalid configuration is rejected with a message naming the setting", "[config]") {
  require_rejected(Config{.workers = 0}, "workers");
  require_rejected(Config{.workers = 65}, "workers");
  require_rejected(Config{.global_queue_interval = 0}, "global_queue_interval");
  require_rejected(Config{.ring_entries = 0}, "ring_entries");
  require_rejected(Config{.ring_entries = 32769}, "ring_entries");
  require_rejected(Config{.max_io_in_flight = 0}, "max_io_in_flight");
  require_rejected(Config{.timeout_wheel_tick = std::chrono::nanoseconds(0)}, "timeout_wheel_tick");
  require_rejected(Config{.stack_size = 4096}, "stack_size");
  require_rejected(Config{.stack_size = std::size_t{2} << 30}, "stack_size");
  require_rejected(Config{.idle_spinner = {20, 10, 10}}, "idle_spinner.budget_us");
  require_rejected(Config{.blocking_threads = 0}, "blocking_threads");
  require_rejected(Config{.connect_timeout = std::chrono::seconds(0)}, "connect_timeout");
  require_rejected(Config{.read_write_timeout = std::chrono::seconds(-1)}, "read_write_timeout");
  require_rejected(Config{.read_write_timeout = std::chrono::hours(24 * 365 * 31)},
                   "read_write_timeout");
  // 2^20 slots of 5 ms is about 87 minutes; two hours does not fit.
  require_rejected(Config{.read_write_timeout = std::chrono::hours(2)}, "timeout_wheel_tick");
}

TEST_CASE("configuration is normalised: ring size and stack size round up", "[config]") {
  Config c{.ring_entries = 3, .stack_size = 100 * 1024 + 1};
  c.validate();
  CHECK(c.ring_entries == 4);
  CHECK(c.stack_size % 4096 == 0);
  CHECK(c.stack_size >= 100 * 1024 + 1);
  Config d;
  d.validate();
  CHECK(d.workers == 2);
  CHECK(d.global_queue_interval == 31);
  CHECK(d.ring_entries == 1024);
  CHECK(d.idle_spinner.budget_us == 2);
  CHECK(d.idle_spinner.max_budget_us == 10);
  CHECK(d.idle_spinner.quick_wake_us == 10);
  CHECK_FALSE(d.catch_exceptions);
  Config edge{.workers = 64, .ring_entries = 32768};
  CHECK_NOTHROW(edge.validate());
}
