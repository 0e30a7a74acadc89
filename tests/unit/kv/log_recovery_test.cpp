// Log::open over what a crash during a compaction leaves: a newer generation
// without its snapshot end is removed and the older one used; an older
// generation beside a complete newer one is removed.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <mutex>
#include <spindle/spindle.hpp>
#include <spindle/storage/storage.hpp>
#include <string>
#include <utility>
#include <vector>

#include "db.hpp"
#include "log.hpp"
#include "record.hpp"
#include "runtime_harness.hpp"
#include "temp_dir.hpp"

namespace {

using spindle::storage::Storage;

// Writes `records` as blob "log.<gen>".
void write_log(const Storage& storage, int gen, const std::string& records) {
  auto opened = storage.open("kv", "log." + std::to_string(gen));
  REQUIRE(opened);
  REQUIRE(opened->blob.write_at(0, records, {.sync = true}));
}

// A complete generation holding `key`.
std::string complete(std::string_view key) {
  std::string out;
  kv::encode_snapshot_begin(out);
  kv::encode_set(out, key, "v", 0);
  kv::encode_snapshot_end(out);
  return out;
}

std::vector<std::string> blobs(const Storage& storage) {
  auto names = storage.scan("kv");
  REQUIRE(names);
  std::vector<std::string> sorted(names->begin(), names->end());
  std::sort(sorted.begin(), sorted.end());
  return sorted;
}

// Opens the log in `storage`; the generation it appends to and the keys it recovered.
std::pair<std::uint64_t, std::size_t> open_log(const Storage& storage, const char* key) {
  kv::Db db;
  auto log = kv::Log::open(storage, kv::FsyncPolicy::kNo, db, false);
  REQUIRE(log);
  const std::uint64_t gen = (*log)->generation();
  REQUIRE((*log)->close());
  std::lock_guard<spindle::Mutex> lock(db.mutex());
  CHECK(db.find(key, kv::now_ms()) != nullptr);
  return {gen, db.size()};
}

// Runs body(storage) on a fiber, over an empty storage directory.
template <class F>
void with_storage(F&& body) {
  spindle::test::TempDir dir;
  spindle::test::run([&] {
    auto storage = Storage::open_directory(dir.path().string());
    REQUIRE(storage);
    body(*storage);
  });
}

}  // namespace

TEST_CASE("an unfinished compaction is removed and the generation before it used", "[kv]") {
  with_storage([](const Storage& storage) {
    write_log(storage, 1, complete("old"));
    std::string unfinished;
    kv::encode_snapshot_begin(unfinished);
    kv::encode_set(unfinished, "old", "v", 0);
    write_log(storage, 2, unfinished);
    CHECK(open_log(storage, "old") == std::pair<std::uint64_t, std::size_t>{1, 1});
    CHECK(blobs(storage) == std::vector<std::string>{"log.1"});
  });
}

TEST_CASE("a generation superseded by a complete compaction is removed", "[kv]") {
  with_storage([](const Storage& storage) {
    write_log(storage, 1, complete("old"));
    write_log(storage, 2, complete("new"));
    CHECK(open_log(storage, "new") == std::pair<std::uint64_t, std::size_t>{2, 1});
    CHECK(blobs(storage) == std::vector<std::string>{"log.2"});
  });
}
