// RwLock: readers share and writers exclude under contention from fibers and
// plain threads, the std lock interfaces, writer preference with reader
// batches, timed calls, and abort (which must not leave readers stuck).
//
// Assertions run on the root fiber (or the main thread) only: children record
// what they saw and the root checks it after joining them.
#include <atomic>
#include <catch2/catch.hpp>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "runtime_harness.hpp"

using namespace std::chrono_literals;
using spindle::Clock;
using spindle::errc;
using spindle::RwLock;
namespace tf = spindle::this_fiber;
using spindle::test::eventually;
using spindle::test::kSettle;

namespace {

#if defined(SPINDLE_TSAN)
constexpr int kRounds = 200;
#else
constexpr int kRounds = 2000;
#endif

// Readers and writers in a loop, counting what a reader-writer lock forbids:
// a writer beside anyone else. Works on a fiber and on a plain thread.
struct Contended {
  RwLock rw;
  long written = 0;  // guarded by rw
  std::atomic<int> readers{0};
  std::atomic<int> writers{0};
  std::atomic<int> violations{0};
  std::atomic<long> reads{0};

  void hammer(int rounds, int id) {
    for (int i = 0; i < rounds; ++i) {
      if ((i + id) % 4 == 0) {
        std::unique_lock lk(rw);
        if (writers.fetch_add(1) != 0 || readers.load() != 0) violations++;
        ++written;
        if (i % 32 == 0) (void)tf::yield();  // hold it across a suspension
        writers.fetch_sub(1);
      } else {
        std::shared_lock lk(rw);
        readers.fetch_add(1);
        if (writers.load() != 0) violations++;
        if (written < 0) violations++;  // a read of what writers write
        reads.fetch_add(1);
        if (i % 16 == 0) (void)tf::yield();
        readers.fetch_sub(1);
      }
    }
  }
  static long writes_per(int rounds, int id) {
    long n = 0;
    for (int i = 0; i < rounds; ++i) n += (i + id) % 4 == 0 ? 1 : 0;
    return n;
  }
};

// Whether a newcomer reader is turned away: true once a writer holds the lock
// or waits for it.
bool readers_held_back(RwLock& rw) {
  if (!rw.try_lock_shared()) return true;
  rw.unlock_shared();
  return false;
}

}  // namespace

TEST_CASE("rw_lock: fibers and plain threads never see a writer beside anyone else",
          "[rw_lock][thread]") {
  spindle::test::on_workers([] {
    constexpr int kFibers = 12;
    constexpr int kThreads = 2;
    Contended c;
    spindle::test::on_threads_and_fibers(kThreads, kFibers, [&](int id) { c.hammer(kRounds, id); });
    long writes = 0;
    for (int id = 0; id < kThreads + kFibers; ++id) writes += Contended::writes_per(kRounds, id);
    CHECK(c.violations.load() == 0);
    CHECK(c.written == writes);
    CHECK(c.reads.load() == long{kThreads + kFibers} * kRounds - writes);
    CHECK(c.rw.try_lock());
    c.rw.unlock();
  });
}

TEST_CASE("rw_lock: readers share it, a writer excludes all, and std locks drive it", "[rw_lock]") {
  spindle::test::on_workers([] {
    RwLock rw;
    {
      std::shared_lock a(rw);
      std::shared_lock b(rw, std::try_to_lock);  // a second reader shares it
      CHECK(b.owns_lock());
      auto other = spindle::spawn([&] {
        std::shared_lock c(rw, std::try_to_lock);
        return c.owns_lock();
      });
      CHECK(other.join().value());
      CHECK_FALSE(rw.try_lock());  // no writer beside readers
    }
    {
      std::unique_lock w(rw);
      CHECK_FALSE(rw.try_lock());  // not recursive
      CHECK_FALSE(rw.try_lock_shared());
      auto probe = spindle::spawn([&] { return rw.try_lock_shared(); });
      CHECK_FALSE(probe.join().value());
    }
    // Unlocking from another fiber than the one that locked is allowed.
    rw.lock();
    auto unlocker = spindle::spawn([&] { rw.unlock(); });
    REQUIRE(unlocker.join().has_value());
    CHECK(rw.try_lock_shared());
    rw.unlock_shared();
    CHECK(rw.try_lock());
    rw.unlock();
  });
}

TEST_CASE("rw_lock: a waiting writer holds back new readers and goes before them",
          "[rw_lock][preference]") {
  spindle::test::on_workers([] {
    RwLock rw;
    std::atomic<int> step{0};
    // Written by the fibers before they end; read after join.
    int writer_at = 0;
    int reader_at = 0;
    rw.lock_shared();
    auto writer = spindle::spawn([&] {
      rw.lock();
      writer_at = ++step;
      rw.unlock();
    });
    // Once the writer waits, a newcomer reader is turned away.
    REQUIRE(eventually([&] { return readers_held_back(rw); }));
    std::atomic<bool> reader_arrived{false};
    auto reader = spindle::spawn([&] {
      reader_arrived = true;
      rw.lock_shared();
      reader_at = ++step;
      rw.unlock_shared();
    });
    REQUIRE(eventually([&] { return reader_arrived.load(); }));
    (void)tf::sleep_for(kSettle);  // a reader wrongly let in would be in by now
    CHECK(step.load() == 0);
    rw.unlock_shared();
    REQUIRE(writer.join().has_value());
    REQUIRE(reader.join().has_value());
    CHECK(writer_at == 1);
    CHECK(reader_at == 2);
    CHECK(rw.try_lock());
    rw.unlock();
  });
}

TEST_CASE("rw_lock: a writer's unlock admits the queued readers as a batch before the next writer",
          "[rw_lock][preference]") {
  // One worker: once a waiter has bumped `arrived`, it ran on to its park
  // before the root could run again, so the queue order is known.
  spindle::test::on_workers(
      [] {
        constexpr int kReaders = 3;
        RwLock rw;
        spindle::Event release_readers;
        std::atomic<int> arrived{0};
        std::atomic<int> readers_in{0};
        std::atomic<bool> writer_in{false};
        std::atomic<bool> late_reader_in{false};
        // Written by the fibers before they end; read after join.
        int readers_seen_by_writer = -1;
        bool writer_seen_by_late_reader = false;
        rw.lock();
        std::vector<spindle::JoinHandle<void>> hs;
        auto reader = [&] {
          arrived++;
          rw.lock_shared();
          readers_in++;
          (void)release_readers.wait();
          rw.unlock_shared();
        };
        for (int i = 0; i < kReaders - 1; ++i) {
          hs.push_back(spindle::spawn(reader));
          REQUIRE(eventually([&] { return arrived.load() == i + 1; }));
        }
        hs.push_back(spindle::spawn([&] {
          arrived++;
          rw.lock();
          readers_seen_by_writer = readers_in.load();
          writer_in = true;
          rw.unlock();
        }));
        REQUIRE(eventually([&] { return arrived.load() == kReaders; }));
        hs.push_back(spindle::spawn(reader));  // queued behind the writer
        REQUIRE(eventually([&] { return arrived.load() == kReaders + 1; }));

        // Every reader queued by now goes in as one batch, the one queued
        // after the writer too; the writer waits for the batch to leave.
        rw.unlock();
        REQUIRE(eventually([&] { return readers_in.load() == kReaders; }));
        (void)tf::sleep_for(kSettle);
        CHECK_FALSE(writer_in.load());
        // The writer still waits, so a newcomer reader waits behind it.
        CHECK(readers_held_back(rw));
        hs.push_back(spindle::spawn([&] {
          rw.lock_shared();
          writer_seen_by_late_reader = writer_in.load();
          late_reader_in = true;
          rw.unlock_shared();
        }));
        (void)tf::sleep_for(kSettle);
        CHECK_FALSE(late_reader_in.load());
        release_readers.set();
        for (auto& h : hs) REQUIRE(h.join().has_value());
        CHECK(readers_seen_by_writer == kReaders);
        CHECK(writer_seen_by_late_reader);
        CHECK(rw.try_lock());
        rw.unlock();
      },
      {1});
}

TEST_CASE("rw_lock: timed calls time out with false and take nothing", "[rw_lock][thread]") {
  spindle::test::on_workers([] {
    RwLock rw;
    rw.lock();
    const auto deadline = Clock::now() + 20ms;
    auto r = rw.try_lock_shared_until(deadline);
    REQUIRE(r.has_value());
    CHECK_FALSE(*r);
    CHECK(Clock::now() >= deadline);
    auto w = rw.try_lock_for(5ms);
    REQUIRE(w.has_value());
    CHECK_FALSE(*w);
    // A plain thread's timed calls time out the same way.
    bool thread_timed_out = false;
    spindle::Event thread_done;
    std::thread t([&] {
      auto tr = rw.try_lock_shared_for(10ms);
      auto tw = rw.try_lock_for(10ms);
      thread_timed_out = tr.has_value() && !*tr && tw.has_value() && !*tw;
      thread_done.set();
    });
    CHECK(thread_done.wait().has_value());
    t.join();
    CHECK(thread_timed_out);
    rw.unlock();
    // The timed-out waiters left the queues: the lock is free for both sides.
    CHECK(rw.try_lock_shared_for(10s).value());
    CHECK(rw.try_lock_shared_until(Clock::now() - 1s)
              .value());  // free: a passed deadline still takes it
    CHECK_FALSE(rw.try_lock_for(1ms).value());
    rw.unlock_shared();
    rw.unlock_shared();
    CHECK(rw.try_lock_until(Clock::now() - 1s).value());

    // An unlock during the wait ends it with true.
    auto h = spindle::spawn([&] {
      (void)tf::sleep_for(2ms);
      rw.unlock();
    });
    CHECK(rw.try_lock_shared_for(10s).value());
    CHECK(h.join().has_value());
    rw.unlock_shared();
    CHECK(rw.try_lock());
    rw.unlock();
  });
}

TEST_CASE("rw_lock: a writer that times out or is aborted lets the readers behind it in",
          "[rw_lock][abort]") {
  spindle::test::on_workers([] {
    RwLock rw;
    rw.lock_shared();
    std::error_code writer_error;  // written by the writer before it ends; read after join
    auto writer = spindle::spawn([&] {
      if (auto r = rw.try_lock_for(1h); !r) writer_error = r.error();
    });
    REQUIRE(eventually([&] { return readers_held_back(rw); }));
    std::atomic<bool> reader_in{false};
    auto reader = spindle::spawn([&] {
      rw.lock_shared();
      reader_in = true;
      rw.unlock_shared();
    });
    (void)tf::sleep_for(kSettle);
    CHECK_FALSE(reader_in.load());
    writer.abort();
    CHECK(writer.join().error() == errc::aborted);
    CHECK(writer_error == errc::aborted);
    // The root still holds its share: the queued reader joins it.
    REQUIRE(reader.join().has_value());
    CHECK(reader_in.load());
    CHECK_FALSE(readers_held_back(rw));

    // The same with a plain thread's writer that times out.
    std::atomic<bool> thread_writer_waiting{false};
    bool thread_timed_out = false;
    spindle::Event thread_done;
    std::thread t([&] {
      thread_writer_waiting = true;
      auto r = rw.try_lock_for(200ms);
      thread_timed_out = r.has_value() && !*r;
      thread_done.set();
    });
    REQUIRE(eventually([&] { return thread_writer_waiting.load() && readers_held_back(rw); }));
    std::atomic<bool> second_reader_in{false};
    auto second = spindle::spawn([&] {
      rw.lock_shared();
      second_reader_in = true;
      rw.unlock_shared();
    });
    CHECK(thread_done.wait().has_value());
    t.join();
    CHECK(thread_timed_out);
    REQUIRE(second.join().has_value());
    CHECK(second_reader_in.load());
    rw.unlock_shared();
    CHECK(rw.try_lock());
    rw.unlock();
  });
}

TEST_CASE("rw_lock: timed calls of an aborted fiber fail with errc::aborted even when free",
          "[rw_lock][abort]") {
  spindle::test::on_workers([] {
    RwLock rw;
    spindle::Event go;
    std::atomic<bool> started{false};
    // Written by the fiber before it ends; read after join.
    std::error_code shared_error;
    std::error_code exclusive_error;
    bool untimed_got = false;
    auto h = spindle::spawn([&] {
      started = true;
      (void)go.wait();  // ends with errc::aborted once aborted
      if (auto r = rw.try_lock_shared_for(10s); !r) shared_error = r.error();
      if (auto r = rw.try_lock_until(Clock::now() + 10s); !r) exclusive_error = r.error();
      // The untimed form is not interruptible: it takes the free lock.
      rw.lock();
      untimed_got = true;
      rw.unlock();
    });
    REQUIRE(eventually([&] { return started.load(); }));
    h.abort();
    CHECK(h.join().error() == errc::aborted);
    CHECK(shared_error == errc::aborted);
    CHECK(exclusive_error == errc::aborted);
    CHECK(untimed_got);
    CHECK(rw.try_lock());
    rw.unlock();
  });
}

TEST_CASE("rw_lock: abort does not end lock() or lock_shared(): they return holding it",
          "[rw_lock][abort]") {
  spindle::test::on_workers([] {
    RwLock rw;
    std::atomic<int> arrived{0};
    std::atomic<int> got{0};
    // Written by the fibers before they end; read after join.
    bool writer_held = false;
    bool reader_held = false;
    rw.lock();
    auto writer = spindle::spawn([&] {
      arrived++;
      rw.lock();
      got++;
      writer_held = !rw.try_lock_shared();
      rw.unlock();
    });
    auto reader = spindle::spawn([&] {
      arrived++;
      rw.lock_shared();
      got++;
      reader_held = !rw.try_lock();
      rw.unlock_shared();
    });
    REQUIRE(eventually([&] { return arrived.load() == 2; }));
    (void)tf::sleep_for(kSettle);  // let them park
    writer.abort();
    reader.abort();
    (void)tf::sleep_for(kSettle);
    CHECK(got.load() == 0);
    rw.unlock();
    CHECK(writer.join().error() == errc::aborted);
    CHECK(reader.join().error() == errc::aborted);
    CHECK(got.load() == 2);
    CHECK(writer_held);
    CHECK(reader_held);
    CHECK(rw.try_lock());
    rw.unlock();
  });
}

TEST_CASE("rw_lock: works between plain threads with no runtime", "[rw_lock][thread]") {
  constexpr int kThreads = 4;
  Contended c;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back([&, t] { c.hammer(kRounds, t); });
  for (auto& t : threads) t.join();
  long writes = 0;
  for (int id = 0; id < kThreads; ++id) writes += Contended::writes_per(kRounds, id);
  CHECK(c.violations.load() == 0);
  CHECK(c.written == writes);
  CHECK(c.rw.try_lock());
  c.rw.unlock();
}
