// Directories and paths: create_dir(s), rename and its modes, removal,
// stat/lstat/exists, and read_dir.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "fs_test_support.hpp"

namespace fs = spindle::fs;

TEST_CASE("fs: create_dir, create_dirs, exists and remove_dir", "[fs][dir]") {
  spindle::test::TempDir dir;
  spindle::test::on_workers([&] {
    const auto base = dir.fresh();
    CHECK_FALSE(fs::exists(base).value());
    REQUIRE(fs::create_dir(base).has_value());
    CHECK(fs::exists(base).value());
    CHECK(fs::stat(base).value().is_directory());
    auto again = fs::create_dir(base);
    REQUIRE_FALSE(again);
    CHECK(again.error() == std::errc::file_exists);
    CHECK(again.error().path == base);

    const auto deep = base / "a" / "b" / "c";
    REQUIRE(fs::create_dirs(deep).has_value());
    CHECK(fs::stat(deep).value().is_directory());
    REQUIRE(fs::create_dirs(deep).has_value());  // already there: fine
    REQUIRE(fs::create_dirs(base / "a" / "b2" / "").has_value());
    CHECK(fs::exists(base / "a" / "b2").value());

    REQUIRE(fs::write_file(base / "file", "x").has_value());
    auto over_file = fs::create_dirs(base / "file");
    REQUIRE_FALSE(over_file);
    CHECK(over_file.error() == std::errc::file_exists);
    auto under_file = fs::create_dirs(base / "file" / "sub");
    REQUIRE_FALSE(under_file);
    CHECK(under_file.error() == std::errc::not_a_directory);
    CHECK_FALSE(fs::exists(base / "file" / "sub").value());  // ENOTDIR: does not exist

    auto full = fs::remove_dir(base / "a");
    REQUIRE_FALSE(full);
    CHECK(full.error() == std::errc::directory_not_empty);
    REQUIRE(fs::remove_dir(deep).has_value());
    CHECK_FALSE(fs::exists(deep).value());
    auto file_as_dir = fs::remove_dir(base / "file");
    REQUIRE_FALSE(file_as_dir);
    CHECK(file_as_dir.error() == std::errc::not_a_directory);
  });
}

TEST_CASE("fs: rename replaces, refuses with NOREPLACE, swaps with EXCHANGE", "[fs][dir]") {
  spindle::test::TempDir dir;
  spindle::test::on_workers([&] {
    const auto base = dir.fresh();
    REQUIRE(fs::create_dir(base).has_value());
    const auto a = base / "a", b = base / "b", c = base / "c";
    REQUIRE(fs::write_file(a, "A").has_value());
    REQUIRE(fs::write_file(b, "B").has_value());

    auto refused = fs::rename(a, b, fs::Rename::kNoReplace);
    REQUIRE_FALSE(refused);
    CHECK(refused.error() == std::errc::file_exists);
    CHECK(refused.error().path == a);
    CHECK(refused.error().path2 == b);
    const std::string message = refused.error().message();
    CHECK(message.find(a.string()) != std::string::npos);
    CHECK(message.find(b.string()) != std::string::npos);
    CHECK(fs::read_file(b).value() == "B");

    REQUIRE(fs::rename(a, b, fs::Rename::kExchange).has_value());
    CHECK(fs::read_file(a).value() == "B");
    CHECK(fs::read_file(b).value() == "A");

    REQUIRE(fs::rename(a, b).has_value());
    CHECK_FALSE(fs::exists(a).value());
    CHECK(fs::read_file(b).value() == "B");
    REQUIRE(fs::rename(b, c, fs::Rename::kNoReplace).has_value());
    CHECK(fs::read_file(c).value() == "B");

    auto missing = fs::rename(a, c, fs::Rename::kExchange);
    REQUIRE_FALSE(missing);
    CHECK(missing.error() == std::errc::no_such_file_or_directory);
  });
}

TEST_CASE("fs: remove_file, and stat and lstat of a symlink", "[fs][dir]") {
  spindle::test::TempDir dir;
  spindle::test::on_workers([&] {
    const auto base = dir.fresh();
    REQUIRE(fs::create_dir(base).has_value());
    const auto target = base / "target", link = base / "link";
    REQUIRE(fs::write_file(target, "12345").has_value());
    REQUIRE(::symlink("target", link.c_str()) == 0);
    CHECK(fs::stat(link).value().size == 5);
    CHECK(fs::stat(link).value().is_regular());
    CHECK(fs::lstat(link).value().is_symlink());

    REQUIRE(fs::remove_file(target).has_value());
    CHECK_FALSE(fs::exists(link).value());  // dangling
    CHECK(fs::lstat(link).value().is_symlink());
    auto gone = fs::remove_file(target);
    REQUIRE_FALSE(gone);
    CHECK(gone.error() == std::errc::no_such_file_or_directory);
    CHECK(gone.error().path == target);
    auto st = fs::stat(link);
    REQUIRE_FALSE(st);
    CHECK(st.error().op == std::string_view("stat"));
    REQUIRE(fs::remove_file(link).has_value());
    auto on_dir = fs::remove_file(base);
    REQUIRE_FALSE(on_dir);
    CHECK(on_dir.error() == std::errc::is_a_directory);
  });
}

TEST_CASE("fs: read_dir lists every entry with its name and type", "[fs][dir]") {
  spindle::test::TempDir dir;
  spindle::test::on_workers([&] {
    const auto base = dir.fresh();
    REQUIRE(fs::create_dir(base).has_value());
    CHECK(fs::read_dir(base).value().empty());
    std::vector<fs::DirEntry> want;
    for (int i = 0; i < 60; ++i) {
      const std::string name = "file-" + std::to_string(i);
      REQUIRE(fs::write_file(base / name, name).has_value());
      want.push_back({name, fs::FileType::kRegular});
    }
    for (const char* name : {"dir-a", "dir-b"}) {
      REQUIRE(fs::create_dir(base / name).has_value());
      want.push_back({name, fs::FileType::kDirectory});
    }
    REQUIRE(::symlink("file-0", (base / "link").c_str()) == 0);
    want.push_back({"link", fs::FileType::kSymlink});
    REQUIRE(::mkfifo((base / "fifo").c_str(), 0600) == 0);
    want.push_back({"fifo", fs::FileType::kFifo});
    std::sort(want.begin(), want.end(),
              [](const fs::DirEntry& x, const fs::DirEntry& y) { return x.name < y.name; });
    CHECK(fs::read_dir(base).value() == want);
  });
}

TEST_CASE("fs: read_dir errors name the path", "[fs][dir]") {
  spindle::test::TempDir dir;
  spindle::test::on_workers([&] {
    const auto missing = dir.path() / "missing";
    auto r = fs::read_dir(missing);
    REQUIRE_FALSE(r);
    CHECK(r.error() == std::errc::no_such_file_or_directory);
    CHECK(r.error().message().find(missing.string()) != std::string::npos);
    const auto file = dir.fresh();
    REQUIRE(fs::write_file(file, "").has_value());
    auto not_dir = fs::read_dir(file);
    REQUIRE_FALSE(not_dir);
    CHECK(not_dir.error() == std::errc::not_a_directory);
  });
}
