// write_file_atomic against crashes. What a test can do honestly: stop the
// steps where a crash would (the steps are spindle::fs::detail's) and kill
// a writer process at random moments. A process crash keeps the page
// cache, so these show the target is never seen partly written or empty;
// that a power cut keeps the old or the new contents rests on the fsync of
// the temporary file before the rename and of the directory after it,
// which no test here can cut power between.
#include "atomic_write.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "fs_test_support.hpp"

namespace fs = spindle::fs;

namespace {

const std::string kOld = spindle::test::pattern(300'000, 1);
const std::string kNew = spindle::test::pattern(300'000, 2);

// A fresh directory under `dir` with `target` holding kOld, and kNew staged
// beside it (steps 1 to 3 of write_file_atomic).
fs::detail::StagedFile stage_over_old(spindle::test::TempDir& dir) {
  const auto base = dir.fresh();
  REQUIRE(fs::create_dir(base).has_value());
  const auto path = base / "target";
  REQUIRE(fs::write_file_atomic(path, kOld).has_value());
  auto staged = fs::detail::stage(path, spindle::test::bytes(kNew), 0644);
  REQUIRE(staged.has_value());
  return std::move(*staged);
}

}  // namespace

TEST_CASE("fs: a crash between the rename and the directory sync leaves old or new, never part",
          "[fs][atomic]") {
  spindle::test::TempDir dir;
  spindle::test::on_workers([&] {
    // Steps 1 to 4, and no directory sync: where the crash stops it.
    const auto staged = stage_over_old(dir);
    REQUIRE(fs::detail::commit(staged).has_value());
    const std::string seen = fs::read_file(staged.target).value();
    CHECK((seen == kOld || seen == kNew));
    CHECK(seen == kNew);  // the page cache has the rename
    CHECK(spindle::test::names_in(staged.dir_path) == std::vector<std::string>{"target"});
  });
}

TEST_CASE("fs: a crash before the rename leaves the old contents and a stray temporary file",
          "[fs][atomic]") {
  spindle::test::TempDir dir;
  spindle::test::on_workers([&] {
    const auto staged = stage_over_old(dir);
    CHECK(fs::read_file(staged.target).value() == kOld);
    CHECK(fs::read_file(staged.dir_path / staged.temp).value() == kNew);
    CHECK(spindle::test::names_in(staged.dir_path).size() == 2);
    // The next replacement is not disturbed by the leftover.
    REQUIRE(fs::write_file_atomic(staged.target, kNew).has_value());
    CHECK(fs::read_file(staged.target).value() == kNew);
  });
}

namespace {

// The child: replaces `path` with kOld and kNew in turn until killed.
[[noreturn]] void replace_forever(const std::filesystem::path& path) {
  spindle::Runtime rt(spindle::Config{.workers = 2});
  const int code = rt.run([&]() -> int {
    for (int i = 0;; ++i) {
      if (!fs::write_file_atomic(path, i % 2 == 0 ? kNew : kOld)) return 2;
    }
  });
  std::_Exit(code);
}

}  // namespace

TEST_CASE("fs: a writer killed at random moments never leaves the target partly written",
          "[fs][atomic]") {
  std::uint32_t seed = std::random_device{}();
  if (const char* s = std::getenv("SPINDLE_SEED")) {
    seed = static_cast<std::uint32_t>(std::strtoul(s, nullptr, 10));
  }
  std::printf("fs atomic write crash test: SPINDLE_SEED=%u\n", seed);
  std::mt19937 rng(seed);
  spindle::test::TempDir dir;
  const auto path = dir.path() / "target";
  spindle::test::run([&] { REQUIRE(fs::write_file_atomic(path, kOld).has_value()); });
  for (int round = 0; round < 12; ++round) {
    INFO("round " << round);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) replace_forever(path);
    ::usleep(static_cast<useconds_t>(1000 + rng() % 20'000));
    REQUIRE(::kill(child, SIGKILL) == 0);
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    REQUIRE(WIFSIGNALED(status));  // not an early exit with an error
    const std::string seen = spindle::test::read_file(path);
    CHECK(seen.size() == kOld.size());
    CHECK((seen == kOld || seen == kNew));
  }
}
