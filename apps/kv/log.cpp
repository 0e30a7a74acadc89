// The log: recovery (replay with torn-tail truncation), creation, compaction,
// and group commit. See log.hpp for the layout, record.hpp for the records.
#include "log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <mutex>
#include <optional>
#include <span>
#include <spindle/sched/context.hpp>
#include <spindle/sched/this_fiber.hpp>
#include <spindle/storage/crc32c.hpp>
#include <vector>

#include "record.hpp"

namespace kv {
namespace {

using spindle::Result;
using spindle::storage::Blob;
using spindle::storage::Storage;

constexpr std::string_view kPartition = "kv";
constexpr std::size_t kReplayChunk = 4 << 20;
constexpr std::size_t kCompactChunk = 4 << 20;
// The most passes (see Log::committer) a commit waits for more records.
constexpr int kGatherPasses = 8;
// With kAlways, how far past the log's end the committer fills the file with
// synced zeros (see log.hpp), in whole pages.
constexpr std::uint64_t kPreallocate = 1 << 20;
constexpr std::uint64_t kPage = 4096;

std::string blob_name(std::uint64_t gen) { return "log." + std::to_string(gen); }

std::optional<std::uint64_t> generation_of(std::string_view name) {
  if (!name.starts_with("log.")) return std::nullopt;
  name.remove_prefix(4);
  std::uint64_t gen = 0;
  auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), gen);
  if (ec != std::errc() || p != name.data() + name.size() || name.empty()) return std::nullopt;
  return gen;
}

// Where a replay is in a log: before its snapshot, inside it, or after it
// (the changes since).
enum class Stage { kBeforeSnapshot, kInSnapshot, kAfterSnapshot };

struct Replayed {
  bool complete = false;       // the snapshot's end was seen
  std::uint64_t good_end = 0;  // the end of the last valid record
  std::uint64_t records = 0;
  // The offset of an intact record (its checksum holds) that makes no sense here.
  std::optional<std::uint64_t> bad_record;
};

// Applies `r` to `db`. False if it makes no sense at `stage`: a log opens
// with a snapshot begin, has one snapshot end, and no other snapshot begin.
bool apply(const Record& r, Db& db, UnixMs now, Stage& stage) {
  if (stage == Stage::kBeforeSnapshot) {
    if (r.kind != RecordKind::kSnapshotBegin) return false;
    stage = Stage::kInSnapshot;
    return true;
  }
  const bool expired = r.expire_at != 0 && r.expire_at <= now;
  switch (r.kind) {
    case RecordKind::kSnapshotBegin:
      return false;
    case RecordKind::kSnapshotEnd:
      if (stage == Stage::kAfterSnapshot) return false;
      stage = Stage::kAfterSnapshot;
      return true;
    case RecordKind::kSet:
      if (expired) {
        db.erase(r.key);
      } else {
        db.set(r.key, r.value, r.expire_at);
      }
      return true;
    case RecordKind::kDel:
      db.erase(r.key);
      return true;
    case RecordKind::kExpire:
      if (Entry* e = db.find(r.key, now)) {
        if (expired) {
          db.erase(r.key);
        } else {
          db.set_expire(r.key, *e, r.expire_at);
        }
      }
      return true;
    case RecordKind::kFlushAll:
      db.clear();
      return true;
  }
  return false;
}

// Replays `blob` (of data length `len`) into `db` up to the first record that
// is cut short or fails its checksum (a torn tail), or that is intact but
// makes no sense (corruption that must not be cut away quietly: bad_record).
Result<Replayed> replay(const Blob& blob, std::uint64_t len, Db& db) {
  Replayed out;
  const UnixMs now = now_ms();
  Stage stage = Stage::kBeforeSnapshot;
  std::string buf;  // bytes [base, base + buf.size()) of the log
  std::uint64_t base = 0;
  std::size_t pos = 0;  // the next record, within buf
  // Makes buf hold at least `want` bytes from pos; false at the log's end.
  auto have = [&](std::size_t want) -> Result<bool> {
    while (buf.size() - pos < want) {
      const std::uint64_t next = base + buf.size();
      if (next >= len) return false;
      if (pos > 0) {
        buf.erase(0, pos);
        base += pos;
        pos = 0;
      }
      const std::size_t n = static_cast<std::size_t>(
          std::min<std::uint64_t>(std::max(kReplayChunk, want - (buf.size() - pos)), len - next));
      const std::size_t old = buf.size();
      buf.resize(old + n);
      if (auto r = blob.read_at(next, std::span(buf.data() + old, n)); !r)
        return spindle::failure(r.error());
    }
    return true;
  };
  std::lock_guard<spindle::Mutex> lock(db.mutex());
  for (;;) {
    auto h = have(kRecordHeader);
    if (!h) return spindle::failure(h.error());
    if (!*h) break;
    const RecordHeader header = decode_header(std::string_view(buf).substr(pos));
    if (header.size == 0 || header.size > len - (base + pos + kRecordHeader)) break;
    auto b = have(kRecordHeader + header.size);
    if (!b) return spindle::failure(b.error());
    if (!*b) break;
    const std::string_view payload = std::string_view(buf).substr(pos + kRecordHeader, header.size);
    if (spindle::storage::crc32c(payload) != header.crc) break;
    const std::optional<Record> record = decode(payload);
    if (!record || !apply(*record, db, now, stage)) {
      out.bad_record = base + pos;
      break;
    }
    pos += kRecordHeader + header.size;
    out.good_end = base + pos;
    ++out.records;
  }
  out.complete = stage == Stage::kAfterSnapshot;
  return out;
}

// True if bytes [from, len) of `blob` are all zeros: space filled ahead by
// the committer, not a torn write.
Result<bool> zeros_to_end(const Blob& blob, std::uint64_t from, std::uint64_t len) {
  std::string buf;
  while (from < len) {
    const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(kReplayChunk, len - from));
    buf.resize(n);
    if (auto r = blob.read_at(from, std::span(buf.data(), n)); !r)
      return spindle::failure(r.error());
    if (buf.find_first_not_of('\0') != std::string::npos) return false;
    from += n;
  }
  return true;
}

// One generation of the log, blob "log.<number>", open for appends.
struct Generation {
  Blob blob;
  std::uint64_t number = 0;
  std::uint64_t end = 0;  // the end of the last record
  // The blob's length. Invariant: [end, allocated) is zeros.
  std::uint64_t allocated = 0;
};

// The generations in the partition, newest first. Other blobs there are
// reported and left alone.
Result<std::vector<std::uint64_t>> generations(const Storage& storage) {
  std::vector<std::uint64_t> gens;
  if (auto names = storage.scan(kPartition); names) {
    for (const auto& n : *names) {
      if (auto g = generation_of(n)) {
        gens.push_back(*g);
      } else {
        fmt::print(stderr, "spindle-kv: ignoring blob '{}' in partition {}\n", n, kPartition);
      }
    }
  } else if (names.error() != spindle::errc::partition_missing) {
    return spindle::failure(names.error());
  }
  std::sort(gens.rbegin(), gens.rend());
  return gens;
}

// Cuts what follows the last valid record of `blob` (of length `len`) unless
// it is all zeros (space the committer filled ahead). Returns the blob's
// length afterwards.
Result<std::uint64_t> cut_torn_tail(Blob& blob, const std::string& name, const Replayed& r,
                                    std::uint64_t len) {
  auto zeros = zeros_to_end(blob, r.good_end, len);
  if (!zeros) return spindle::failure(zeros.error());
  if (*zeros) return len;
  fmt::print(stderr,
             "spindle-kv: warning: {} has a torn tail: cutting {} bytes at offset {} "
             "({} records kept)\n",
             name, len - r.good_end, r.good_end, r.records);
  if (auto t = blob.resize(r.good_end); !t) return spindle::failure(t.error());
  if (auto s = blob.sync(); !s) return spindle::failure(s.error());
  return r.good_end;
}

// Replays the newest complete generation of `gens` (newest first) into `db`,
// which must be empty, and returns it open; nullopt, with `db` empty, if
// there is none. A generation without its snapshot end is a compaction or a
// creation that did not finish: it is removed, unless it is the oldest and
// holds more than a snapshot begin (then, as for an intact record that makes
// no sense, cutting it could lose acknowledged data: blob_corrupt). The
// generations older than the one returned were superseded by a compaction
// that crashed before removing them: they are removed.
// Invariant on success: the generation returned is the only one left.
Result<std::optional<Generation>> recover(const Storage& storage,
                                          std::span<const std::uint64_t> gens, Db& db) {
  std::optional<Generation> found;
  for (std::uint64_t gen : gens) {
    const std::string name = blob_name(gen);
    if (found) {
      fmt::print(stderr, "spindle-kv: removing superseded {}\n", name);
      if (auto r = storage.remove(kPartition, name); !r) return spindle::failure(r.error());
      continue;
    }
    auto o = storage.open(kPartition, name);
    if (!o) return spindle::failure(o.error());
    auto r = replay(o->blob, o->len, db);
    if (!r) return spindle::failure(r.error());
    if (r->bad_record || (!r->complete && r->records > 1 && gen == gens.back())) {
      fmt::print(stderr,
                 "spindle-kv: {} is corrupt: {} at offset {}; refusing to start (remove "
                 "or repair it by hand)\n",
                 name, r->bad_record ? "an intact record that makes no sense" : "no snapshot end",
                 r->bad_record.value_or(r->good_end));
      return spindle::failure(spindle::errc::blob_corrupt);
    }
    if (!r->complete) {
      fmt::print(stderr, "spindle-kv: {} is an unfinished compaction or creation; removing it\n",
                 name);
      {
        std::lock_guard<spindle::Mutex> lock(db.mutex());
        db.clear();
      }
      o->blob = Blob();  // closed before it is removed
      if (auto rm = storage.remove(kPartition, name); !rm) return spindle::failure(rm.error());
      continue;
    }
    auto len = cut_torn_tail(o->blob, name, *r, o->len);
    if (!len) return spindle::failure(len.error());
    found = Generation{.blob = o->blob, .number = gen, .end = r->good_end, .allocated = *len};
  }
  return found;
}

// Blob `name`, created, or emptied of what a crashed creation or compaction
// left in it.
Result<Blob> open_empty(const Storage& storage, const std::string& name) {
  auto o = storage.open(kPartition, name);
  if (!o) return spindle::failure(o.error());
  if (o->len != 0) {
    if (auto t = o->blob.resize(0); !t) return spindle::failure(t.error());
  }
  return o->blob;
}

// Creates generation `gen` as an empty snapshot (begin and end), written and
// synced.
Result<Generation> create(const Storage& storage, std::uint64_t gen) {
  auto blob = open_empty(storage, blob_name(gen));
  if (!blob) return spindle::failure(blob.error());
  std::string init;
  encode_snapshot_begin(init);
  encode_snapshot_end(init);
  if (auto w = blob->write_at(0, init, {.sync = true}); !w) return spindle::failure(w.error());
  return Generation{.blob = *blob, .number = gen, .end = init.size(), .allocated = init.size()};
}

// Writes the live keys of `db` as a snapshot into the generation after
// `current`, syncs it, then removes `current`. Invariant: a complete
// generation is on disk throughout; a crash before the removal leaves both,
// and recover() keeps the newer.
Result<Generation> compact(const Storage& storage, Db& db, Generation current) {
  const std::uint64_t gen = current.number + 1;
  const std::string old_name = blob_name(current.number), name = blob_name(gen);
  auto blob = open_empty(storage, name);
  if (!blob) return spindle::failure(blob.error());
  // The snapshot is encoded at start-up, before any client: in memory, then
  // written in pieces so that no single SQE is huge.
  std::string all;
  std::uint64_t keys = 0;
  encode_snapshot_begin(all);
  {
    std::lock_guard<spindle::Mutex> lock(db.mutex());
    db.for_each(now_ms(), [&](const std::string& k, const Entry& e) {
      encode_set(all, k, e.value, e.expire_at);
      ++keys;
    });
  }
  encode_snapshot_end(all);
  std::uint64_t at = 0;
  while (at < all.size()) {
    const std::size_t n = std::min<std::size_t>(kCompactChunk, all.size() - at);
    if (auto w = blob->write_at(at, std::string_view(all).substr(at, n)); !w)
      return spindle::failure(w.error());
    at += n;
  }
  if (auto s = blob->sync(); !s) return spindle::failure(s.error());
  current.blob = Blob();  // closed before it is removed
  if (auto rm = storage.remove(kPartition, old_name); !rm) return spindle::failure(rm.error());
  fmt::print(stderr, "spindle-kv: compacted {} ({} bytes) into {} ({} bytes, {} keys)\n", old_name,
             current.end, name, at, keys);
  return Generation{.blob = *blob, .number = gen, .end = at, .allocated = at};
}

}  // namespace

Log::~Log() = default;

void Log::fatal(std::string_view what, std::error_code ec) {
  fmt::print(stderr, "spindle-kv: fatal: the log {} failed: {}; exiting without acknowledging\n",
             what, ec.message());
  std::fflush(stderr);
  std::_Exit(1);
}

// Recovery, else creation, then the compaction asked for: each leaves one
// complete generation on disk, which the log then appends to.
Result<std::unique_ptr<Log>> Log::open(Storage storage, FsyncPolicy policy, Db& db,
                                       bool compact_at_start) {
  auto gens = generations(storage);
  if (!gens) return spindle::failure(gens.error());
  auto recovered = recover(storage, *gens, db);
  if (!recovered) return spindle::failure(recovered.error());
  Result<Generation> g =
      *recovered ? std::move(**recovered) : create(storage, gens->empty() ? 1 : gens->front() + 1);
  if (g && compact_at_start) g = compact(storage, db, std::move(*g));
  if (!g) return spindle::failure(g.error());
  std::unique_ptr<Log> log(new Log(std::move(storage), policy));
  log->blob_ = std::move(g->blob);
  log->generation_ = g->number;
  log->end_ = g->end;
  log->allocated_ = g->allocated;
  return log;
}

void Log::start(std::chrono::nanoseconds window) {
  window_ = window;
  committer_ = spindle::spawn("kv-committer", [this] { committer(); });
  if (policy_ == FsyncPolicy::kEverysec)
    syncer_ = spindle::spawn("kv-syncer", [this] { syncer(); });
}

template <class Encode>
std::uint64_t Log::append_locked(Encode&& encode) {
  std::lock_guard<spindle::Mutex> lock(mutex_);
  const bool was_empty = pending_.empty();
  encode(pending_);
  const std::uint64_t seq = ++appended_;
  appended_mirror_.store(seq, std::memory_order_release);
  if (was_empty) work_.notify_one();
  return seq;
}

std::uint64_t Log::append_set(std::string_view key, std::string_view value, UnixMs expire_at) {
  return append_locked([&](std::string& out) { encode_set(out, key, value, expire_at); });
}
std::uint64_t Log::append_del(std::string_view key) {
  return append_locked([&](std::string& out) { encode_del(out, key); });
}
std::uint64_t Log::append_expire(std::string_view key, UnixMs expire_at) {
  return append_locked([&](std::string& out) { encode_expire(out, key, expire_at); });
}
std::uint64_t Log::append_flush() { return append_locked(encode_flush_all); }

Log::Client::Client(Log& log) : log_(log) {
  std::lock_guard<spindle::Mutex> lock(log_.mutex_);
  ++log_.clients_;
}

Log::Client::~Client() {
  std::lock_guard<spindle::Mutex> lock(log_.mutex_);
  --log_.clients_;
  if (log_.in_window_) log_.work_.notify_one();
}

spindle::Result<void> Log::wait(std::uint64_t seq) {
  std::unique_lock<spindle::Mutex> lock(mutex_);
  const bool synced = policy_ == FsyncPolicy::kAlways;
  for (;;) {
    if ((synced ? synced_ : written_) >= seq) return {};
    const std::uint64_t releases = releases_;
    if (++waiting_ >= clients_ && in_window_) work_.notify_one();
    auto r = done_.wait(lock);
    if (releases_ == releases) --waiting_;  // not released: still counted
    if (!r) return r;
  }
}

void Log::release_locked() noexcept {
  released_ = std::exchange(waiting_, 0);
  ++releases_;
}

void Log::hold_window(std::unique_lock<spindle::Mutex>& lock) {
  if (window_.count() == 0 || released_ < 2) return;
  in_window_ = true;
  // Each client still out sends at least one request before it waits: its
  // worker lets their completions gather rather than wake for each. An abort
  // ends the window early; the round is written all the same.
  const spindle::Deadline end = spindle::Clock::now() + window_;
  while (waiting_ < clients_ && !stopping_) {
    spindle::this_fiber::expect_completions(clients_ - waiting_, end);
    auto notified = work_.wait_until(lock, end);
    if (!notified || !*notified) break;
  }
  in_window_ = false;
}

void Log::committer() {
  std::string batch;
  for (;;) {
    std::uint64_t upto;
    {
      std::unique_lock<spindle::Mutex> lock(mutex_);
      if (!work_.wait(lock, [&] { return !pending_.empty() || stopping_; })) return;  // aborted
      if (pending_.empty()) return;  // stopping, and nothing left
      hold_window(lock);
    }
    // Woken by the first append of a round, this fiber often runs right after
    // it: let the connections already ready append theirs first, pass after
    // pass until one brings nothing new, so that one write covers them all.
    // Before a sync write the passes go through the ring, so that requests it
    // has received meanwhile join too; a plain write costs less than such a
    // pass. (An abort here changes nothing: the batch is written.)
    const bool sync = policy_ == FsyncPolicy::kAlways;
    for (int pass = 0; pass < kGatherPasses; ++pass) {
      const std::uint64_t before = appended();
      if (!(sync ? spindle::this_fiber::yield_to_io() : spindle::this_fiber::yield())) break;
      if (appended() == before) break;
    }
    {
      std::lock_guard<spindle::Mutex> lock(mutex_);
      batch.clear();
      batch.swap(pending_);  // the next round appends into the old buffer
      upto = appended_;
    }
    // Never cancelled: an abort at shutdown lets the write finish. With
    // kAlways it is a sync write (RWF_DSYNC): one ring operation for the data
    // and its durability.
    if (sync && end_ + batch.size() > allocated_) preallocate(end_ + batch.size());
    if (auto w = blob_.write_at(end_, batch, {.sync = sync}); !w) fatal("write", w.error());
    end_ += batch.size();
    allocated_ = std::max(allocated_, end_);
    {
      std::lock_guard<spindle::Mutex> lock(mutex_);
      written_ = upto;
      if (sync) synced_ = upto;
      release_locked();
    }
    done_.notify_all();
  }
}

void Log::preallocate(std::uint64_t upto) {
  static const std::string zeros(kPreallocate, '\0');
  const std::uint64_t target = (upto + kPage - 1) / kPage * kPage + kPreallocate;
  while (allocated_ < target) {
    const auto n = static_cast<std::size_t>(std::min(kPreallocate, target - allocated_));
    if (auto w = blob_.write_at(allocated_, std::string_view(zeros).substr(0, n)); !w)
      fatal("write", w.error());
    allocated_ += n;
  }
  if (auto s = blob_.sync(); !s) fatal("sync", s.error());
}

void Log::syncer() {
  using namespace std::chrono_literals;
  for (;;) {
    if (!spindle::this_fiber::sleep_for(1s)) return;  // aborted
    std::uint64_t target;
    {
      std::lock_guard<spindle::Mutex> lock(mutex_);
      target = written_;
      if (synced_ >= target) continue;
    }
    if (auto s = blob_.sync(); !s) fatal("sync", s.error());
    std::lock_guard<spindle::Mutex> lock(mutex_);
    synced_ = std::max(synced_, target);
  }
}

spindle::Result<void> Log::close() {
  {
    std::lock_guard<spindle::Mutex> lock(mutex_);
    stopping_ = true;
  }
  work_.notify_all();
  if (committer_.valid()) (void)committer_.join();
  if (syncer_.valid()) {
    syncer_.abort();
    (void)syncer_.join();
  }
  std::string rest;
  std::uint64_t upto;
  {
    std::lock_guard<spindle::Mutex> lock(mutex_);
    rest.swap(pending_);
    upto = appended_;
  }
  if (!rest.empty()) {
    if (auto w = blob_.write_at(end_, rest); !w) return w;
    end_ += rest.size();
  }
  if (auto s = blob_.sync(); !s) return s;
  {
    std::lock_guard<spindle::Mutex> lock(mutex_);
    written_ = synced_ = upto;
    release_locked();
  }
  done_.notify_all();
  return {};
}

}  // namespace kv
