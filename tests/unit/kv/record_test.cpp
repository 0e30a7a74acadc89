// The log's records (record.hpp): each kind encodes to the bytes logs have
// always held, those bytes decode, and a log written byte by byte in that
// format recovers.
#include "record.hpp"

#include <catch2/catch.hpp>
#include <cstdint>
#include <mutex>
#include <spindle/spindle.hpp>
#include <spindle/storage/crc32c.hpp>
#include <spindle/storage/storage.hpp>
#include <string>
#include <string_view>

#include "db.hpp"
#include "log.hpp"
#include "runtime_harness.hpp"
#include "temp_dir.hpp"

namespace {

using namespace std::string_view_literals;

// Payloads spelled out byte by byte, as the first logs were written.
// expire_at 0x0102030405060708, little endian.
constexpr auto kAt = "\x08\x07\x06\x05\x04\x03\x02\x01"sv;
constexpr kv::UnixMs kAtValue = 0x0102030405060708;
const std::string kSetPayload =
    "S" + std::string(kAt) + std::string("\x03\x00\x00\x00", 4) + "keyvalue";
const std::string kDelPayload = "Dkey";
const std::string kExpirePayload = "E" + std::string(kAt) + "key";

// The header (length and CRC-32C, little endian) and `payload`.
std::string record(std::string_view payload) {
  std::string out;
  const auto put = [&](std::uint32_t v) {
    for (int i = 0; i < 4; ++i) out += static_cast<char>(v >> (8 * i));
  };
  put(static_cast<std::uint32_t>(payload.size()));
  put(spindle::storage::crc32c(payload));
  out += payload;
  return out;
}

template <class F>
std::string encoded(F&& encode) {
  std::string out;
  encode(out);
  return out;
}

}  // namespace

TEST_CASE("each record kind encodes to its historical bytes", "[kv]") {
  CHECK(encoded([](std::string& o) { kv::encode_set(o, "key", "value", kAtValue); }) ==
        record(kSetPayload));
  CHECK(encoded([](std::string& o) { kv::encode_del(o, "key"); }) == record(kDelPayload));
  CHECK(encoded([](std::string& o) { kv::encode_expire(o, "key", kAtValue); }) ==
        record(kExpirePayload));
  CHECK(encoded(kv::encode_flush_all) == record("F"));
  CHECK(encoded(kv::encode_snapshot_begin) == record("B"));
  CHECK(encoded(kv::encode_snapshot_end) == record("Z"));
}

TEST_CASE("records in the historical format decode", "[kv]") {
  const std::string bytes = record(kSetPayload);
  const kv::RecordHeader header = kv::decode_header(bytes);
  CHECK(header.size == kSetPayload.size());
  CHECK(header.crc == spindle::storage::crc32c(kSetPayload));

  auto set = kv::decode(kSetPayload);
  REQUIRE(set);
  CHECK(set->kind == kv::RecordKind::kSet);
  CHECK(set->key == "key");
  CHECK(set->value == "value");
  CHECK(set->expire_at == kAtValue);

  auto del = kv::decode(kDelPayload);
  REQUIRE(del);
  CHECK(del->kind == kv::RecordKind::kDel);
  CHECK(del->key == "key");

  auto expire = kv::decode(kExpirePayload);
  REQUIRE(expire);
  CHECK(expire->kind == kv::RecordKind::kExpire);
  CHECK(expire->key == "key");
  CHECK(expire->expire_at == kAtValue);

  CHECK(kv::decode("F")->kind == kv::RecordKind::kFlushAll);
  CHECK(kv::decode("B")->kind == kv::RecordKind::kSnapshotBegin);
  CHECK(kv::decode("Z")->kind == kv::RecordKind::kSnapshotEnd);
}

TEST_CASE("a payload of an unknown kind or with fields that do not fit does not decode", "[kv]") {
  CHECK_FALSE(kv::decode(""));
  CHECK_FALSE(kv::decode("Qxyz"));
  CHECK_FALSE(kv::decode("S" + std::string(kAt)));  // no key length
  CHECK_FALSE(kv::decode("S" + std::string(kAt) + std::string("\x09\x00\x00\x00", 4) + "key"));
  CHECK_FALSE(kv::decode("E1234567"));  // expire_at cut short
  CHECK_FALSE(kv::decode("Fx"));
  CHECK_FALSE(kv::decode("Bx"));
  CHECK_FALSE(kv::decode("Zx"));
}

TEST_CASE("a log written in the historical format recovers", "[kv]") {
  const std::string never(8, '\0');  // expire_at 0
  const std::string log =
      record("B") + record("S" + never + std::string("\x01\x00\x00\x00", 4) + "gone") +
      record("Z") + record("Dg") + record(kSetPayload) + record("E" + never + "key");
  spindle::test::TempDir dir;
  spindle::test::run([&] {
    auto storage = spindle::storage::Storage::open_directory(dir.path().string());
    REQUIRE(storage);
    {
      auto opened = storage->open("kv", "log.1");
      REQUIRE(opened);
      REQUIRE(opened->blob.write_at(0, log, {.sync = true}));
    }
    kv::Db db;
    auto opened = kv::Log::open(*storage, kv::FsyncPolicy::kNo, db, false);
    REQUIRE(opened);
    CHECK((*opened)->generation() == 1);
    {
      std::lock_guard<spindle::Mutex> lock(db.mutex());
      CHECK(db.size() == 1);  // "g" set in the snapshot, deleted after it
      const kv::Entry* e = db.find("key", kv::now_ms());
      REQUIRE(e);
      CHECK(e->value == "value");
      CHECK(e->expire_at == 0);  // set with kAtValue, then made persistent
    }
    REQUIRE((*opened)->close());
  });
}
