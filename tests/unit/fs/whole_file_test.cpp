// read_file, write_file and write_file_atomic on whole files.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "fs_test_support.hpp"

namespace fs = spindle::fs;

TEST_CASE("fs: write_file and read_file round trip empty, small and multi-MiB files",
          "[fs][whole]") {
  spindle::test::TempDir dir;
  spindle::test::on_workers([&] {
    const auto base = dir.fresh();
    REQUIRE(fs::create_dir(base).has_value());
    for (const std::size_t size :
         {std::size_t{0}, std::size_t{1}, std::size_t{4096}, std::size_t{3} << 20 | 17}) {
      INFO("size " << size);
      const auto path = base / ("f" + std::to_string(size));
      const std::string data = spindle::test::pattern(size, static_cast<std::uint32_t>(size));
      REQUIRE(fs::write_file(path, data).has_value());
      CHECK(fs::read_file(path).value() == data);
      CHECK(spindle::test::read_file(path) == data);
    }
    // Truncates what was there.
    const auto path = base / "f1";
    REQUIRE(fs::write_file(path, spindle::test::bytes("xy")).has_value());
    CHECK(fs::read_file(path).value() == "xy");
  });
}

TEST_CASE("fs: read_file reads to the end where stat says size 0", "[fs][whole]") {
  spindle::test::on_workers(
      [] { CHECK(fs::read_file("/proc/self/status").value().find("Name:") == 0); });
}

TEST_CASE("fs: read_file and write_file errors name the path", "[fs][whole]") {
  spindle::test::TempDir dir;
  spindle::test::on_workers([&] {
    const auto missing = dir.path() / "missing" / "config.toml";
    auto r = fs::read_file(missing);
    REQUIRE_FALSE(r);
    CHECK(r.error() == std::errc::no_such_file_or_directory);
    CHECK(r.error().message().find(missing.string()) != std::string::npos);
    auto w = fs::write_file(missing, "x");
    REQUIRE_FALSE(w);
    CHECK(w.error() == std::errc::no_such_file_or_directory);
    CHECK(w.error().path == missing);
  });
}

TEST_CASE("fs: write_file_atomic creates and replaces, leaving nothing else behind",
          "[fs][whole][atomic]") {
  spindle::test::TempDir dir;
  spindle::test::on_workers([&] {
    const auto base = dir.fresh();
    REQUIRE(fs::create_dir(base).has_value());
    const auto path = base / "state.json";
    REQUIRE(fs::write_file_atomic(path, "{\"v\": 1}", 0600).has_value());
    CHECK(fs::read_file(path).value() == "{\"v\": 1}");
    CHECK((fs::stat(path).value().permissions() & ~0600u) == 0);
    const std::string big = spindle::test::pattern(2 << 20, 9);
    REQUIRE(fs::write_file_atomic(path, big).has_value());
    CHECK(fs::read_file(path).value() == big);
    REQUIRE(fs::write_file_atomic(path, "").has_value());
    CHECK(fs::read_file(path).value().empty());
    CHECK(spindle::test::names_in(base) == std::vector<std::string>{"state.json"});
  });
}

TEST_CASE("fs: write_file_atomic fails cleanly: a missing directory, a directory path",
          "[fs][whole][atomic]") {
  spindle::test::TempDir dir;
  spindle::test::on_workers([&] {
    const auto base = dir.fresh();
    auto r = fs::write_file_atomic(base / "x", "data");
    REQUIRE_FALSE(r);
    CHECK(r.error() == std::errc::no_such_file_or_directory);
    CHECK(r.error().path == base);  // the directory it could not open
    REQUIRE(fs::create_dirs(base / "sub").has_value());
    // A directory in the way: the rename fails and the temporary file goes.
    auto over = fs::write_file_atomic(base / "sub", "data");
    REQUIRE_FALSE(over);
    CHECK(over.error() == std::errc::is_a_directory);
    CHECK(over.error().path2 == base / "sub");
    CHECK(spindle::test::names_in(base) == std::vector<std::string>{"sub"});
    auto slash = fs::write_file_atomic(dir.path() / "", "data");
    REQUIRE_FALSE(slash);
    CHECK(slash.error() == std::errc::is_a_directory);
  });
}
