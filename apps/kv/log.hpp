// Log: spindle-kv's durability. Every change to the keyspace is appended to a
// log blob in storage/ (partition "kv", blob "log.<generation>"), and a
// committer fiber writes what accumulated since its last round in one write,
// with --fsync always a sync write (RWF_DSYNC): a group commit that covers
// every change that arrived meanwhile. Before a sync write, it lets the worker
// pass through its ring (this_fiber::yield_to_io) until a pass brings no new
// record, so that requests already received join the write; before a plain
// write, which costs less than a pass, it yields only to the fibers already
// ready. Replies wait for it (see wait()).
//
// A round may also wait for clients (Log::Client: a connection) that are not
// waiting yet: after a write that released two or more, the next round stays
// open up to the commit window (start(); spindle-kv's --commit-window) and
// writes as soon as every client waits. The clients that write answered are
// then likely to send their next change within the window, and every write
// saved is a sync (kAlways) or, where the file system has no asynchronous
// buffered writes (ext4), a hand-off to an io-wq thread. A lone client, or one
// whose peers all wait, never waits for the window. While it holds a round
// open, the committer tells its worker how many clients are still out
// (this_fiber::expect_completions): the worker then wakes once for their
// requests, not once for each.
//
// The log is a sequence of records (record.hpp). It starts with a snapshot
// (empty for a new log; every live key for a compacted one) between a
// snapshot begin and a snapshot end. A log whose snapshot end is missing is a
// compaction (or a creation) that did not finish: it is removed and the
// previous generation used; if there is none and it holds more than a snapshot begin,
// it is corrupt. On start the newest complete log is replayed; a torn tail (a
// record cut short or failing its checksum: a crash in the middle of a write)
// is cut off with a warning. An intact record that makes no sense is
// corruption: the start fails loudly and the log is left as it is.
//
// With --fsync always the file runs ahead of the log: zeros, written and
// synced up to 1 MiB past the last record, so that a commit overwrites them
// and its sync writes the data alone (the file's size and block map do not
// change). Replay ends at the first zero length field, and a tail of nothing
// but zeros is that space, not a torn tail.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <spindle/sched/condvar.hpp>
#include <spindle/sched/join_handle.hpp>
#include <spindle/sched/mutex.hpp>
#include <spindle/storage/storage.hpp>
#include <string>
#include <string_view>
#include <utility>

#include "db.hpp"

namespace kv {

enum class FsyncPolicy { kAlways, kEverysec, kNo };

// Thread-safe; fiber-only.
class Log {
 public:
  // Replays the newest complete log into `db` (which must be empty), or
  // creates a first one; with `compact_at_start`, rewrites the keyspace into a new
  // generation and removes the old one. Prints what it did to stderr.
  // Suspends: for the storage operations.
  static spindle::Result<std::unique_ptr<Log>> open(spindle::storage::Storage storage,
                                                    FsyncPolicy policy, Db& db,
                                                    bool compact_at_start);

  ~Log();

  // Spawns the committer (and, with kEverysec, the once-a-second syncer).
  // `window`: the commit window (see above); zero: a round writes at once.
  void start(std::chrono::nanoseconds window);

  // A client of the log (a connection whose replies wait for it), counted for
  // the round's window while this guard lives, which must end before the
  // log's. Fiber-only.
  class Client {
   public:
    explicit Client(Log& log);
    Client(const Client&) = delete;
    Client& operator=(const Client&) = delete;
    ~Client();

   private:
    Log& log_;
  };

  // Appends a record; called with db.mutex() held, so that the log's order
  // is the keyspace's. Returns the record's sequence number.
  std::uint64_t append_set(std::string_view key, std::string_view value, UnixMs expire_at);
  std::uint64_t append_del(std::string_view key);
  std::uint64_t append_expire(std::string_view key, UnixMs expire_at);
  std::uint64_t append_flush();

  // The sequence number of the last record appended.
  std::uint64_t appended() const noexcept {
    return appended_mirror_.load(std::memory_order_acquire);
  }

  // Returns once the records up to `seq` are as durable as the policy
  // promises before a reply: synced (kAlways) or written to the file
  // (kEverysec, kNo; the kernel has them, so they survive a crash of this
  // process). errc::aborted if the fiber is aborted first.
  // Suspends: until the committer has done that.
  spindle::Result<void> wait(std::uint64_t seq);

  // Writes and syncs everything appended so far and stops the committer.
  // Suspends: for the write, the sync and the committer's end.
  spindle::Result<void> close();

  std::uint64_t generation() const noexcept { return generation_; }

 private:
  Log(spindle::storage::Storage storage, FsyncPolicy policy)
      : storage_(std::move(storage)), policy_(policy) {}

  // Appends the record encode(pending_) writes. With db.mutex() held.
  template <class Encode>
  std::uint64_t append_locked(Encode&& encode);
  void committer();
  // Waits, with mutex_ held, until the round's window (see start()) closes.
  void hold_window(std::unique_lock<spindle::Mutex>& lock);
  // Uncounts the waiters a write just released. With mutex_ held.
  void release_locked() noexcept;
  // Makes [allocated_, x) zeros, written and synced, with x at least
  // kPreallocate past `upto`. Committer-only.
  void preallocate(std::uint64_t upto);
  void syncer();
  [[noreturn]] static void fatal(std::string_view what, std::error_code ec);

  spindle::storage::Storage storage_;
  const FsyncPolicy policy_;
  spindle::storage::Blob blob_;
  std::uint64_t generation_ = 0;
  std::uint64_t end_ = 0;  // committer-only (and open/close): the log's length
  // committer-only (and open/close): the blob's length; [end_, allocated_) is zeros.
  std::uint64_t allocated_ = 0;

  spindle::Mutex mutex_;
  spindle::CondVar work_;               // the committer waits for records
  spindle::CondVar done_;               // waiters wait for written_/synced_
  std::string pending_;                 // guarded by mutex_: encoded, not yet written
  std::uint64_t appended_ = 0;          // guarded by mutex_
  std::uint64_t written_ = 0;           // guarded by mutex_
  std::uint64_t synced_ = 0;            // guarded by mutex_
  bool stopping_ = false;               // guarded by mutex_
  std::chrono::nanoseconds window_{0};  // set by start()
  std::size_t clients_ = 0;             // guarded by mutex_: live Client guards
  // Guarded by mutex_: fibers in wait() that no write has released yet; how
  // many the last write released; writes so far (a waiter released by one
  // is no longer counted); whether the committer holds a window open.
  std::size_t waiting_ = 0;
  std::size_t released_ = 0;
  std::uint64_t releases_ = 0;
  bool in_window_ = false;
  std::atomic<std::uint64_t> appended_mirror_{0};  // release in append; acquire in appended()
  spindle::JoinHandle<void> committer_, syncer_;
};

}  // namespace kv
