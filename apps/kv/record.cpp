#include "record.hpp"

#include <spindle/storage/crc32c.hpp>

namespace kv {
namespace {

void put32(std::string& out, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i)
    out[at + static_cast<std::size_t>(i)] = static_cast<char>(v >> (8 * i));
}
void append32(std::string& out, std::uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; ++i) b[i] = static_cast<char>(v >> (8 * i));
  out.append(b, 4);
}
void append64(std::string& out, std::uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(v >> (8 * i));
  out.append(b, 8);
}
std::uint32_t get32(std::string_view s, std::size_t at) {
  std::uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= std::uint32_t{static_cast<unsigned char>(s[at + static_cast<std::size_t>(i)])} << (8 * i);
  return v;
}
std::uint64_t get64(std::string_view s, std::size_t at) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= std::uint64_t{static_cast<unsigned char>(s[at + static_cast<std::size_t>(i)])} << (8 * i);
  return v;
}

// Appends a header to fill in and the kind; returns where the record starts.
std::size_t begin(std::string& out, RecordKind kind) {
  const std::size_t start = out.size();
  out.append(kRecordHeader, '\0');
  out += static_cast<char>(kind);
  return start;
}

// Fills in the header of the record at `start`, whose payload runs to the end of `out`.
void finish(std::string& out, std::size_t start) {
  const std::string_view payload = std::string_view(out).substr(start + kRecordHeader);
  put32(out, start, static_cast<std::uint32_t>(payload.size()));
  put32(out, start + 4, spindle::storage::crc32c(payload));
}

}  // namespace

void encode_set(std::string& out, std::string_view key, std::string_view value, UnixMs expire_at) {
  const std::size_t start = begin(out, RecordKind::kSet);
  append64(out, static_cast<std::uint64_t>(expire_at));
  append32(out, static_cast<std::uint32_t>(key.size()));
  out += key;
  out += value;
  finish(out, start);
}

void encode_del(std::string& out, std::string_view key) {
  const std::size_t start = begin(out, RecordKind::kDel);
  out += key;
  finish(out, start);
}

void encode_expire(std::string& out, std::string_view key, UnixMs expire_at) {
  const std::size_t start = begin(out, RecordKind::kExpire);
  append64(out, static_cast<std::uint64_t>(expire_at));
  out += key;
  finish(out, start);
}

void encode_flush_all(std::string& out) { finish(out, begin(out, RecordKind::kFlushAll)); }
void encode_snapshot_begin(std::string& out) {
  finish(out, begin(out, RecordKind::kSnapshotBegin));
}
void encode_snapshot_end(std::string& out) { finish(out, begin(out, RecordKind::kSnapshotEnd)); }

RecordHeader decode_header(std::string_view bytes) {
  return {.size = get32(bytes, 0), .crc = get32(bytes, 4)};
}

std::optional<Record> decode(std::string_view payload) {
  if (payload.empty()) return std::nullopt;
  Record r{.kind = static_cast<RecordKind>(payload[0])};
  std::string_view p = payload.substr(1);
  switch (r.kind) {
    case RecordKind::kSet: {
      if (p.size() < 12) return std::nullopt;
      r.expire_at = static_cast<UnixMs>(get64(p, 0));
      const std::uint32_t klen = get32(p, 8);
      if (p.size() - 12 < klen) return std::nullopt;
      r.key = p.substr(12, klen);
      r.value = p.substr(12 + klen);
      return r;
    }
    case RecordKind::kDel:
      r.key = p;
      return r;
    case RecordKind::kExpire:
      if (p.size() < 8) return std::nullopt;
      r.expire_at = static_cast<UnixMs>(get64(p, 0));
      r.key = p.substr(8);
      return r;
    case RecordKind::kFlushAll:
    case RecordKind::kSnapshotBegin:
    case RecordKind::kSnapshotEnd:
      if (!p.empty()) return std::nullopt;
      return r;
  }
  return std::nullopt;  // an unknown kind
}

}  // namespace kv
