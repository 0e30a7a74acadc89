// Fuzzes spindle-kv's log replay (apps/kv/log.cpp). Replay reads through a
// storage Blob on a fiber, so each input is written as the data of blob
// "log.1" in partition "kv" of a scratch Storage (see scratch(); on tmpfs the
// fsyncs cost nothing) inside a spindle::Runtime with one worker,
// and kv::Log::open replays it, as spindle-kv does at start-up (with
// compaction for half the inputs). Checks: no crash; open either succeeds or
// says errc::blob_corrupt (a torn tail is cut and reported, never fatal);
// when it keeps log.1, what it kept is a prefix of the input; and a second
// open (a restart) replays the log the first one left into the same keyspace.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "chunks.hpp"
#include "db.hpp"
#include "log.hpp"
#include "spindle/spindle.hpp"

namespace {

namespace fs = std::filesystem;
using spindle::storage::Storage;

// The Storage directory: in $TMPDIR if set (scripts/fuzz.sh points it at a
// directory it removes: libFuzzer often ends with _Exit, so no exit handler
// here would run), else in /dev/shm or the system's temporary directory.
const fs::path& scratch() {
  static const fs::path dir = [] {
    const fs::path base = std::getenv("TMPDIR") == nullptr && fs::is_directory("/dev/shm")
                              ? fs::path("/dev/shm")
                              : fs::temp_directory_path();
    std::string tmpl = (base / "spindle-fuzz-log.XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) std::abort();
    return fs::path(tmpl);
  }();
  return dir;
}

using Keyspace = std::map<std::string, std::pair<std::string, kv::UnixMs>>;

Keyspace live(kv::Db& db, kv::UnixMs now) {
  Keyspace out;
  std::lock_guard<spindle::Mutex> lock(db.mutex());
  db.for_each(now, [&](const std::string& k, const kv::Entry& e) {
    out.emplace(k, std::make_pair(e.value, e.expire_at));
  });
  return out;
}

// Log::open into `db`; null if it refuses the log as corrupt.
std::unique_ptr<kv::Log> open(const Storage& storage, kv::Db& db, bool compact) {
  auto log = kv::Log::open(storage, kv::FsyncPolicy::kNo, db, compact);
  if (!log) {
    SPINDLE_FUZZ_CHECK(log.error() == spindle::errc::blob_corrupt);
    return nullptr;
  }
  return std::move(*log);
}

void replay(std::string_view input) {
  auto storage = Storage::open_directory(scratch()).value();
  {
    auto o = storage.open("kv", "log.1").value();
    SPINDLE_FUZZ_CHECK(o.len == 0);
    if (!input.empty()) o.blob.write_at(0, input).value();
  }
  const bool compact = std::hash<std::string_view>{}(input) % 2 == 1;
  kv::Db first;
  auto log = open(storage, first, compact);
  if (!log) return;  // corrupt: refused, and left as it was
  const std::uint64_t gen = log->generation();
  if (gen == 1) {
    auto o = storage.open("kv", "log.1").value();
    SPINDLE_FUZZ_CHECK(o.len <= input.size());
    const auto kept = o.blob.read(0, static_cast<std::size_t>(o.len)).value();
    SPINDLE_FUZZ_CHECK(std::string_view(reinterpret_cast<const char*>(kept.data()), kept.size()) ==
                       input.substr(0, kept.size()));
  }
  log->close().value();
  log.reset();
  // A restart replays what the first open left: the same keyspace.
  kv::Db second;
  auto again = open(storage, second, false);
  SPINDLE_FUZZ_CHECK(again != nullptr);
  SPINDLE_FUZZ_CHECK(again->generation() == gen);
  again->close().value();
  const kv::UnixMs now = kv::now_ms();
  SPINDLE_FUZZ_CHECK(live(first, now) == live(second, now));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static spindle::Runtime runtime(spindle::Config{.workers = 1});
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::error_code ec;
  fs::remove_all(scratch() / "kv", ec);  // the previous input's blobs
  runtime.run([&] { replay(input); });
  return 0;
}
