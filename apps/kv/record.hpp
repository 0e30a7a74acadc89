// The records of spindle-kv's log: their kinds, one encoder per kind, and the
// decoder. Nothing here touches storage or the keyspace.
//
// Record: u32 payload length, u32 CRC-32C of the payload (both little
// endian), then the payload, whose first byte is its kind:
//   'S' u64 expire_at, u32 key length, key, value    kSet (expire_at 0: none)
//   'D' key                                          kDel
//   'E' u64 expire_at, key                           kExpire, of an existing key
//   'F'                                              kFlushAll
//   'B' / 'Z'                                        kSnapshotBegin / kSnapshotEnd
// The bytes are the format of every log written so far: a change here must
// still decode them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "db.hpp"

namespace kv {

// A payload's first byte.
enum class RecordKind : char {
  kSet = 'S',
  kDel = 'D',
  kExpire = 'E',
  kFlushAll = 'F',
  kSnapshotBegin = 'B',
  kSnapshotEnd = 'Z',
};

// The length and checksum fields before each payload.
inline constexpr std::size_t kRecordHeader = 8;

// Each appends one whole record (header and payload) to `out`.
void encode_set(std::string& out, std::string_view key, std::string_view value, UnixMs expire_at);
void encode_del(std::string& out, std::string_view key);
void encode_expire(std::string& out, std::string_view key, UnixMs expire_at);
void encode_flush_all(std::string& out);
void encode_snapshot_begin(std::string& out);
void encode_snapshot_end(std::string& out);

// A record's header fields.
struct RecordHeader {
  std::uint32_t size = 0;  // of the payload; 0 is never written (space ahead of the log)
  std::uint32_t crc = 0;   // CRC-32C of the payload
};

// The header in bytes [0, kRecordHeader) of `bytes`.
RecordHeader decode_header(std::string_view bytes);

// A decoded payload. Plain value; key and value view the payload decoded.
struct Record {
  RecordKind kind;
  std::string_view key{};    // kSet, kDel, kExpire
  std::string_view value{};  // kSet
  UnixMs expire_at = 0;      // kSet, kExpire
};

// The record in `payload` (after its header), or nullopt if its kind is
// unknown or its fields do not fill it exactly.
std::optional<Record> decode(std::string_view payload);

}  // namespace kv
