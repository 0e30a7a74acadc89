// Storage conformance (the reference's storage suite, storage/mod.rs, and its
// iouring storage unit tests): open, remove, recreate, scan, partition names,
// versions, headers, torn creations, the .hold lock, retained sync failures.
#include "spindle/storage/storage.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>
#include <string>
#include <vector>

#include "spindle/storage/header.hpp"
#include "spindle/storage/partition.hpp"
#include "storage_support.hpp"

using namespace std::chrono_literals;
using spindle::errc;
using spindle::storage::Blob;
using spindle::storage::blob_file_name;
using spindle::storage::encode_header;
using spindle::storage::kHeaderSize;
using spindle::storage::Storage;
using spindle::storage::VersionRange;
using spindle::test::str;
using spindle::test::TempDir;

namespace {

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// Runs `body(storage)` as the root fiber with a Storage on `dir`.
template <class F>
void with_storage(const std::filesystem::path& dir, F body, spindle::Config c = {}) {
  spindle::test::run(
      [&] {
        auto st = Storage::open_directory(dir);
        REQUIRE(st);
        body(*st);
      },
      c);
}

std::string header_string(std::uint16_t version) {
  const auto h = encode_header(version);
  return str(h);
}

}  // namespace

TEST_CASE("open creates the partition and the blob - reopen sees its data", "[storage]") {
  TempDir tmp;
  spindle::test::on_workers([&] {
    const auto dir = tmp.fresh();
    auto st = Storage::open_directory(dir).value();
    CHECK(st.directory() == dir);
    auto [blob, len, version] = st.open("partition", "blob").value();
    CHECK(len == 0);
    CHECK(version == 0);
    CHECK(blob.partition() == "partition");
    CHECK(blob.name() == "blob");
    REQUIRE(blob.write_at(0, "hello world"));
    REQUIRE(blob.sync());
    CHECK(str(blob.read(0, 11).value()) == "hello world");
    auto again = st.open("partition", "blob").value();
    CHECK(again.len == 11);
    CHECK(str(again.blob.read(6, 5).value()) == "world");
    CHECK(st.scan("partition").value() == std::vector<std::string>{"blob"});
  });
}

TEST_CASE("data survives the Storage and the runtime - the file layout is the reference's",
          "[storage]") {
  TempDir tmp;
  const auto dir = tmp.fresh();
  with_storage(dir, [](Storage& st) {
    auto b = st.open("p", "durable", {2, 3}).value();
    CHECK(b.version == 3);
    REQUIRE(b.blob.write_at(0, "persisted", {.sync = true}));
  });
  with_storage(dir, [](Storage& st) {
    auto b = st.open("p", "durable", {1, 3}).value();
    CHECK(b.len == 9);
    CHECK(b.version == 3);
    CHECK(str(b.blob.read(0, 9).value()) == "persisted");
  });
  // <dir>/<partition>/<hex name>: the 4096-byte header, then the data.
  CHECK(blob_file_name("durable") == "64757261626c65");
  const std::string raw = spindle::test::read_file(dir / "p" / "64757261626c65");
  REQUIRE(raw.size() == kHeaderSize + 9);
  CHECK(raw.substr(0, kHeaderSize) == header_string(3));
  CHECK(raw.substr(kHeaderSize) == "persisted");
  CHECK(std::filesystem::exists(dir / ".hold"));
}

TEST_CASE("the directory's .hold lock admits one Storage at a time", "[storage][hold]") {
  TempDir tmp;
  const auto dir = tmp.fresh();
  spindle::test::on_workers([&] {
    std::optional<Storage> first = Storage::open_directory(dir).value();
    auto second = Storage::open_directory(dir);
    REQUIRE_FALSE(second);
    CHECK(second.error() == std::errc::device_or_resource_busy);
    // A blob keeps the directory locked after its Storage handle is gone.
    Blob blob = first->open("p", "b").value().blob;
    first.reset();
    CHECK(Storage::open_directory(dir).error() == std::errc::device_or_resource_busy);
    blob = Blob();
    CHECK(Storage::open_directory(dir).has_value());
  });
}

TEST_CASE("a nested path is created with its parents", "[storage]") {
  TempDir tmp;
  with_storage(tmp.path() / "a" / "b" / "c",
               [](Storage& st) { CHECK(st.open("p", "x").has_value()); });
  CHECK(std::filesystem::is_directory(tmp.path() / "a" / "b" / "c" / "p"));
}

TEST_CASE("remove(partition name) removes one blob durably - open handles still read",
          "[storage][remove]") {
  TempDir tmp;
  spindle::test::on_workers([&] {
    auto st = Storage::open_directory(tmp.fresh()).value();
    auto a = st.open("p", "a").value().blob;
    auto b = st.open("p", "b").value().blob;
    REQUIRE(a.write_at(0, "synced", {.sync = true}));
    REQUIRE(a.write_at(6, "+unsynced"));
    REQUIRE(st.remove("p", "a"));
    CHECK(st.scan("p").value() == std::vector<std::string>{"b"});
    CHECK(st.remove("p", "a").error() == errc::blob_missing);
    CHECK(st.remove("p", "never").error() == errc::blob_missing);
    CHECK(st.remove("q", "a").error() == errc::blob_missing);  // no such partition either
    // The removed blob's handle (and a copy of it) still reads everything.
    Blob copy = a;
    CHECK(str(copy.read(0, 15).value()) == "synced+unsynced");
  });
}

TEST_CASE("remove(partition) removes every blob durably - handles still read",
          "[storage][remove]") {
  TempDir tmp;
  spindle::test::on_workers([&] {
    const auto dir = tmp.fresh();
    auto st = Storage::open_directory(dir).value();
    std::vector<Blob> blobs;
    for (int i = 0; i < 5; ++i) {
      blobs.push_back(st.open("doomed", "blob" + std::to_string(i)).value().blob);
      REQUIRE(blobs.back().write_at(0, "data" + std::to_string(i)));
    }
    auto keep = st.open("kept", "x").value().blob;
    REQUIRE(st.remove("doomed"));
    CHECK(st.scan("doomed").error() == errc::partition_missing);
    CHECK(st.remove("doomed").error() == errc::partition_missing);
    CHECK(st.remove("never").error() == errc::partition_missing);
    CHECK(st.scan("kept").value() == std::vector<std::string>{"x"});
    for (int i = 0; i < 5; ++i) {
      CHECK(str(blobs[static_cast<std::size_t>(i)].read(0, 5).value()) ==
            "data" + std::to_string(i));
    }
  });
}

TEST_CASE("remove(partition) also removes entries that are not blobs", "[storage][remove]") {
  TempDir tmp;
  const auto dir = tmp.fresh();
  with_storage(dir, [](Storage& st) { REQUIRE(st.open("p", "a")); });
  std::filesystem::create_directories(dir / "p" / "nested" / "deeper");
  spindle::test::write_file(dir / "p" / "nested" / "deeper" / "f", "x");
  spindle::test::write_file(dir / "p" / "NOTHEX", "x");
  with_storage(dir, [](Storage& st) {
    CHECK(st.scan("p").error() == errc::partition_corrupt);
    REQUIRE(st.remove("p"));
    CHECK(st.scan("p").error() == errc::partition_missing);
  });
  CHECK_FALSE(std::filesystem::exists(dir / "p"));
}

TEST_CASE("a removed name reopens as a new independent blob", "[storage][remove]") {
  TempDir tmp;
  spindle::test::on_workers([&] {
    auto st = Storage::open_directory(tmp.fresh()).value();
    // Several generations of one name.
    std::vector<Blob> generations;
    for (int gen = 0; gen < 3; ++gen) {
      auto [blob, len, version] =
          st.open("p", "name", {0, static_cast<std::uint16_t>(gen)}).value();
      CHECK(len == 0);
      CHECK(version == gen);
      REQUIRE(blob.write_at(0, "gen" + std::to_string(gen)));
      generations.push_back(blob);
      REQUIRE(st.remove("p", "name"));
    }
    for (int gen = 0; gen < 3; ++gen) {
      CHECK(str(generations[static_cast<std::size_t>(gen)].read(0, 4).value()) ==
            "gen" + std::to_string(gen));
    }
    // Recreated after a partition removal too.
    auto old = st.open("p", "name").value().blob;
    REQUIRE(old.write_at(0, "old"));
    REQUIRE(st.remove("p"));
    auto fresh = st.open("p", "name").value();
    CHECK(fresh.len == 0);
    CHECK(fresh.blob.read(0, 1).error() == errc::insufficient_length);
    CHECK(str(old.read(0, 3).value()) == "old");
  });
}

TEST_CASE("scan lists blob names binary ones included", "[storage][scan]") {
  TempDir tmp;
  spindle::test::on_workers([&] {
    auto st = Storage::open_directory(tmp.fresh()).value();
    CHECK(st.scan("p").error() == errc::partition_missing);
    const std::vector<std::string> names = {"a", "log", std::string("\x00\xff", 2),
                                            std::string(spindle::storage::kMaxBlobNameSize, 'z')};
    for (const auto& n : names) REQUIRE(st.open("p", n));
    CHECK(sorted(st.scan("p").value()) == sorted(names));
    CHECK(st.scan("other").error() == errc::partition_missing);
  });
}

TEST_CASE("scan rejects entries that are not blobs and skips names that are not UTF-8",
          "[storage][scan]") {
  TempDir tmp;
  const auto dir = tmp.fresh();
  with_storage(dir, [](Storage& st) { REQUIRE(st.open("p", "ok")); });
  struct Bad {
    const char* what;
    std::function<void(const std::filesystem::path&)> make;
  };
  const std::vector<Bad> bad = {
      {"uppercase hex", [](auto& p) { spindle::test::write_file(p / "6F6B", ""); }},
      {"odd length", [](auto& p) { spindle::test::write_file(p / "abc", ""); }},
      {"not hex", [](auto& p) { spindle::test::write_file(p / "hello", ""); }},
      {"0x prefix", [](auto& p) { spindle::test::write_file(p / "0x6f6b", ""); }},
      {"directory", [](auto& p) { std::filesystem::create_directory(p / "6f6c"); }},
  };
  for (const auto& b : bad) {
    INFO(b.what);
    const auto part = dir / "p";
    b.make(part);
    with_storage(dir, [](Storage& st) { CHECK(st.scan("p").error() == errc::partition_corrupt); });
    std::filesystem::remove_all(part);
    std::filesystem::create_directory(part);
    spindle::test::write_file(part / "6f6b", "");
  }
  // A name that is not UTF-8 is skipped, as the reference's OsString scan does.
  spindle::test::write_file(dir / "p" / "\xff\xfe", "");
  with_storage(dir,
               [](Storage& st) { CHECK(st.scan("p").value() == std::vector<std::string>{"ok"}); });
}

TEST_CASE("partition names are validated before the filesystem is touched", "[storage][names]") {
  TempDir tmp;
  const auto dir = tmp.fresh();
  with_storage(dir, [](Storage& st) {
    for (const char* bad : {"", ".", "..", "a/b", "../escape", "a b", "\xc3\xa9"}) {
      INFO(bad);
      CHECK(st.open(bad, "x").error() == errc::partition_invalid);
      CHECK(st.remove(bad).error() == errc::partition_invalid);
      CHECK(st.remove(bad, "x").error() == errc::partition_invalid);
      CHECK(st.scan(bad).error() == errc::partition_invalid);
    }
    for (const char* ok : {"A-z_0-9", "-", "_"}) {
      INFO(ok);
      CHECK(st.open(ok, "x").has_value());
    }
    CHECK(st.open("p", "").error() == std::errc::invalid_argument);
    CHECK(st.open("p", std::string(spindle::storage::kMaxBlobNameSize + 1, 'x')).error() ==
          std::errc::invalid_argument);
    CHECK(st.open("p", "x", VersionRange{2, 1}).error() == std::errc::invalid_argument);
  });
  CHECK_FALSE(std::filesystem::exists(dir.parent_path() / "escape"));
}

TEST_CASE("many partitions each with its own blobs", "[storage]") {
  TempDir tmp;
  spindle::test::on_workers([&] {
    auto st = Storage::open_directory(tmp.fresh()).value();
    for (int p = 0; p < 8; ++p) {
      for (int b = 0; b < 4; ++b) {
        auto blob = st.open("part" + std::to_string(p), "blob" + std::to_string(b)).value().blob;
        REQUIRE(blob.write_at(0, std::to_string(p * 10 + b)));
      }
    }
    for (int p = 0; p < 8; ++p) {
      CHECK(st.scan("part" + std::to_string(p)).value().size() == 4);
      for (int b = 0; b < 4; ++b) {
        auto o = st.open("part" + std::to_string(p), "blob" + std::to_string(b)).value();
        const std::string want = std::to_string(p * 10 + b);
        CHECK(str(o.blob.read(0, want.size()).value()) == want);
      }
    }
  });
}

TEST_CASE("a blob's version must be in the accepted range", "[storage][version]") {
  TempDir tmp;
  spindle::test::on_workers([&] {
    auto st = Storage::open_directory(tmp.fresh()).value();
    CHECK(st.open("p", "v", {3, 5}).value().version == 5);  // new: stamped with the max
    CHECK(st.open("p", "v", {0, 4}).error() == errc::version_mismatch);
    CHECK(st.open("p", "v", {6, 9}).error() == errc::version_mismatch);
    CHECK(st.open("p", "v").error() == errc::version_mismatch);  // the default range is {0, 0}
    CHECK(st.open("p", "v", {5, 9}).value().version == 5);
    CHECK(st.open("p", "v", {0, 65535}).value().version == 5);
    // The mismatch left the blob alone.
    CHECK(st.open("p", "v", {5, 5}).value().len == 0);
  });
}

TEST_CASE("a damaged header is a loud blob_corrupt error and the file is left alone",
          "[storage][header]") {
  TempDir tmp;
  const auto dir = tmp.fresh();
  const auto file = dir / "p" / blob_file_name("b");
  const std::string good = header_string(1) + "payload";
  struct Case {
    const char* what;
    std::string bytes;
  };
  std::vector<Case> cases;
  auto with = [&](std::size_t at, char c) {
    std::string s = good;
    s[at] = c;
    return s;
  };
  cases.push_back({"bad magic", with(0, 'X')});
  cases.push_back({"runtime version 2", with(5, 2)});
  cases.push_back({"bad checksum", with(8, static_cast<char>(good[8] ^ 1))});
  cases.push_back({"version changed under its checksum", with(7, 9)});
  cases.push_back({"nonzero padding", with(100, 1)});
  cases.push_back({"nonzero last padding byte", with(4095, 1)});
  cases.push_back({"garbage, no longer than a header", std::string(4096, 'g')});
  cases.push_back({"garbage, shorter than a header", std::string(100, 'g')});
  cases.push_back({"a header prefix, then garbage", good.substr(0, 6) + "garbage"});
  cases.push_back({"a torn header with data after it", std::string(4096, '\0') + "data"});
  for (const auto& c : cases) {
    INFO(c.what);
    spindle::test::write_file(file, c.bytes);
    with_storage(
        dir, [](Storage& st) { CHECK(st.open("p", "b", {0, 10}).error() == errc::blob_corrupt); });
    CHECK(spindle::test::read_file(file) == c.bytes);
  }
}

TEST_CASE("a creation cut short by a crash is healed on open", "[storage][header][torn]") {
  TempDir tmp;
  const auto dir = tmp.fresh();
  const auto file = dir / "p" / blob_file_name("b");
  const std::string h = header_string(4);
  std::vector<std::pair<std::string, std::string>> cases = {
      {"empty file", ""},
      {"magic only", h.substr(0, 4)},
      {"magic and runtime version", h.substr(0, 6)},
      {"up to the blob version", h.substr(0, 8)},
      {"up to half the checksum", h.substr(0, 10)},
      {"whole prefix, no padding", h.substr(0, 12)},
      {"4096 zero bytes", std::string(4096, '\0')},
      {"prefix then zeros to 4096", h.substr(0, 9) + std::string(4096 - 9, '\0')},
      {"a different version's prefix", header_string(2).substr(0, 11)},
  };
  for (const auto& [what, bytes] : cases) {
    INFO(what);
    spindle::test::write_file(file, bytes);
    with_storage(dir, [](Storage& st) {
      auto o = st.open("p", "b", {1, 7});
      REQUIRE(o);
      CHECK(o->len == 0);
      CHECK(o->version == 7);
      REQUIRE(o->blob.write_at(0, "after"));
    });
    CHECK(spindle::test::read_file(file) == header_string(7) + "after");
  }
}

TEST_CASE("a failed sync is retained until the blob is removed", "[storage][sync]") {
  TempDir tmp;
  const auto dir = tmp.fresh();
  with_storage(dir, [](Storage& st) {
    auto a = st.open("p", "a").value().blob;
    auto b = st.open("p", "b").value().blob;
    REQUIRE(a.sync());
    spindle::storage::detail::inject_sync_failure_for_testing(
        a, std::make_error_code(std::errc::io_error));
    CHECK(a.sync().error() == std::errc::io_error);
    CHECK(a.sync().error() == std::errc::io_error);  // not forgotten after one report
    CHECK(a.write_at(0, "x", {.sync = true}).error() == std::errc::io_error);
    CHECK(a.write_at(0, "x").has_value());  // plain writes still work
    CHECK(b.sync().has_value());            // other blobs are unaffected
    // A later open of the same blob, even after every handle is gone, still fails.
    a = Blob();
    auto again = st.open("p", "a").value().blob;
    CHECK(again.sync().error() == std::errc::io_error);
    CHECK(again.write_at(0, "y", {.sync = true}).error() == std::errc::io_error);
    // Removal clears it: the re-created blob syncs.
    again = Blob();
    REQUIRE(st.remove("p", "a"));
    CHECK(st.open("p", "a").value().blob.sync().has_value());
    // So does removing the partition.
    auto c = st.open("q", "c").value().blob;
    spindle::storage::detail::inject_sync_failure_for_testing(
        c, std::make_error_code(std::errc::no_space_on_device));
    c = Blob();
    CHECK(st.open("q", "c").value().blob.sync().error() == std::errc::no_space_on_device);
    REQUIRE(st.remove("q"));
    CHECK(st.open("q", "c").value().blob.sync().has_value());
    // A failure with no later removal...
    auto d = st.open("q", "d").value().blob;
    spindle::storage::detail::inject_sync_failure_for_testing(
        d, std::make_error_code(std::errc::io_error));
  });
  // ...is not carried over to a new Storage instance (as the reference: the
  // record lives in memory).
  with_storage(dir, [](Storage& st) { CHECK(st.open("q", "d").value().blob.sync().has_value()); });
}

TEST_CASE("opening a blob from an aborted fiber fails without creating it", "[storage][abort]") {
  TempDir tmp;
  const auto dir = tmp.fresh();
  with_storage(dir, [](Storage& st) {
    spindle::Event go;
    auto h = spindle::spawn([&] {
      (void)go.wait();  // returns aborted
      return st.open("p", "never");
    });
    h.abort();
    go.set();
    CHECK(h.join().error() == errc::aborted);
    auto names = st.scan("p");
    CHECK((!names || names->empty()));
  });
}
