// Ring: sizes, completion through service()/wait(), batching, operations in
// flight beyond the ring's size and completions beyond its CQ, re-entrant
// handlers, timeouts, destruction with ops pending.

#include "spindle/uring/ring.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "spindle/uring/probe.hpp"
#include "spindle/uring/wake_source.hpp"
#include "uring_test_support.hpp"

namespace spindle::uring {
namespace {

using namespace std::chrono_literals;
using test::make_ring;
using test::NopOp;
using test::Pipe;
using test::ReadOp;
using test::wait_until;

// A one-byte read of each pipe, submitted to `ring`; each logs its index in
// `log` when it completes.
std::vector<std::unique_ptr<ReadOp>> submit_reads(Ring& ring, std::vector<Pipe>& pipes,
                                                  std::vector<int>& log) {
  std::vector<std::unique_ptr<ReadOp>> reads;
  for (std::size_t i = 0; i < pipes.size(); ++i) {
    reads.push_back(std::make_unique<ReadOp>(pipes[i].read_fd, static_cast<int>(i), &log));
    ring.submit(reads.back().get());
  }
  return reads;
}

TEST_CASE("uring ring: entries must be a nonzero power of two up to 32768", "[uring][ring]") {
  for (unsigned bad : {0u, 3u, 6u, 1000u, 32769u, 65536u}) {
    INFO("entries = " << bad);
    try {
      Ring ring(RingOptions{.entries = bad});
      FAIL("a ring of " << bad << " entries was accepted");
    } catch (const std::invalid_argument& e) {
      CHECK(std::string(e.what()).find("ring entries") != std::string::npos);
    }
  }
  for (unsigned good : {1u, 2u, 1024u, 32768u}) {
    INFO("entries = " << good);
    auto ring = make_ring(good);
    CHECK(ring->entries() == good);
    CHECK(ring->fd() >= 0);
    CHECK(ring->pending() == 0);
    CHECK(ring->in_flight() == 0);
  }
}

TEST_CASE("uring ring: uses SINGLE_ISSUER|DEFER_TASKRUN where the kernel has it", "[uring][ring]") {
  auto ring = make_ring(8);
  CHECK(ring->defer_taskrun() == require_kernel_support().single_issuer_defer_taskrun);
  if (test::kernel_at_least(6, 1)) CHECK(ring->defer_taskrun());
}

TEST_CASE("uring ring: a NOP completes through service() exactly once", "[uring][ring]") {
  auto ring = make_ring(8);
  NopOp op;
  ring->submit(&op);
  CHECK(op.state() == Operation::State::kInFlight);
  CHECK(ring->in_flight() == 1);
  CHECK(op.calls == 0);  // nothing runs before the ring is serviced

  CHECK(ring->service() == 1);
  CHECK(op.calls == 1);
  CHECK(op.res == 0);
  CHECK(op.state() == Operation::State::kIdle);
  CHECK(ring->pending() == 0);

  CHECK(ring->service() == 0);
  CHECK(op.calls == 1);
}

TEST_CASE("uring ring: one service() or wait() submits and completes 64 NOPs", "[uring][ring]") {
  auto ring = make_ring(128);
  std::vector<NopOp> ops(64);
  for (NopOp& op : ops) ring->submit(&op);
  CHECK(ring->in_flight() == 64);

  std::size_t handled = 0;
  SECTION("service") { handled = ring->service(); }
  SECTION("wait") { handled = ring->wait(5s); }

  CHECK(handled == 64);
  CHECK(ring->pending() == 0);
  for (const NopOp& op : ops) {
    CHECK(op.calls == 1);
    CHECK(op.res == 0);
  }
}

TEST_CASE("uring ring: service() and wait() dispatch at most the completions asked for",
          "[uring][ring]") {
  auto ring = make_ring(16);
  std::vector<NopOp> ops(10);
  for (NopOp& op : ops) ring->submit(&op);
  CHECK(ring->service(4) == 4);
  CHECK(ring->pending() == 6);
  CHECK(ring->wait(1s, 1, 4) == 4);
  CHECK(ring->pending() == 2);
  CHECK(ring->service() == 2);
  CHECK(ring->pending() == 0);
  for (const NopOp& op : ops) CHECK(op.calls == 1);
}

TEST_CASE("uring ring: operations in flight are not capped by the ring's size", "[uring][ring]") {
  // Ten times the SQ and five times the CQ (twice the SQ): reads that wait for
  // ever must not hold up later operations, and completions beyond the CQ wait
  // in the kernel's overflow list until dispatched.
  constexpr int kReads = 40;
  auto ring = make_ring(4);
  std::vector<Pipe> pipes(kReads);
  std::vector<int> log;
  const auto reads = submit_reads(*ring, pipes, log);
  for (const auto& r : reads) CHECK(r->state() == Operation::State::kInFlight);
  CHECK(ring->in_flight() == kReads);
  CHECK(ring->service() == 0);  // every read now waits in the kernel

  NopOp later;
  ring->submit(&later);
  wait_until(*ring, [&] { return later.calls != 0; });
  CHECK(later.calls == 1);
  CHECK(log.empty());
  CHECK(ring->in_flight() == kReads);

  // Every read completes before any is dispatched: the CQ holds only 8.
  for (int i = 0; i < kReads; ++i) pipes[i].put(static_cast<char>('a' + i));
  std::this_thread::sleep_for(20ms);
  wait_until(*ring, [&] { return log.size() == kReads; });
  REQUIRE(log.size() == kReads);
  std::sort(log.begin(), log.end());
  for (int i = 0; i < kReads; ++i) {
    CHECK(log[i] == i);
    CHECK(reads[i]->calls == 1);
    CHECK(reads[i]->res == 1);
    CHECK(reads[i]->buf[0] == static_cast<char>('a' + i));
  }
  CHECK(ring->pending() == 0);
}

// Re-submits itself from on_complete until it has completed `limit` times.
struct RepeatingNop : test::TestOp {
  RepeatingNop(Ring* r, int n) : TestOp(&NopOp::prep, &RepeatingNop::done), ring(r), limit(n) {}
  static void done(Operation* self, int res, std::uint32_t) noexcept {
    auto* op = static_cast<RepeatingNop*>(self);
    ++op->calls;
    op->res = res;
    if (op->state() != State::kIdle) op->bad_state = true;
    if (op->calls < op->limit) op->ring->submit(op);
  }
  Ring* ring;
  int limit;
  bool bad_state = false;
};

TEST_CASE("uring ring: an operation may re-submit itself from its on_complete", "[uring][ring]") {
  auto ring = make_ring(4);
  RepeatingNop op(ring.get(), 5);
  ring->submit(&op);
  for (int round = 0; round < 20 && op.calls < 5; ++round) {
    const int before = op.calls;
    ring->service();
    CHECK(op.calls == before + 1);  // one completion per turn: the re-submission waits
  }
  CHECK(op.calls == 5);
  CHECK(op.res == 0);
  CHECK_FALSE(op.bad_state);
  CHECK(op.state() == Operation::State::kIdle);
  CHECK(ring->pending() == 0);
}

// On completion, cancels `victim` and submits `extra`.
struct MeddlingNop : test::TestOp {
  MeddlingNop(Ring* r, std::vector<std::string>* l)
      : TestOp(&NopOp::prep, &MeddlingNop::done), ring(r), log(l) {}
  static void done(Operation* self, int, std::uint32_t) noexcept {
    auto* op = static_cast<MeddlingNop*>(self);
    op->log->push_back("A begin");
    op->ring->cancel(op->victim);
    op->ring->submit(op->extra);
    op->log->push_back("A end");
  }
  Ring* ring;
  std::vector<std::string>* log;
  Operation* victim = nullptr;
  Operation* extra = nullptr;
};

struct LoggingNop : test::TestOp {
  LoggingNop(std::string n, std::vector<std::string>* l)
      : TestOp(&NopOp::prep, &LoggingNop::done), name(std::move(n)), log(l) {}
  static void done(Operation* self, int res, std::uint32_t) noexcept {
    auto* op = static_cast<LoggingNop*>(self);
    ++op->calls;
    op->res = res;
    op->log->push_back(op->name + (res == -ECANCELED ? " cancelled" : " done"));
  }
  std::string name;
  std::vector<std::string>* log;
};

TEST_CASE("uring ring: handlers may cancel and submit other operations", "[uring][ring]") {
  auto ring = make_ring(1);
  std::vector<std::string> log;
  Pipe pipe;
  MeddlingNop a(ring.get(), &log);
  ReadOp b(pipe.read_fd);  // waits for data that never comes
  LoggingNop c("C", &log);
  LoggingNop d("D", &log);
  a.victim = &b;
  a.extra = &d;
  ring->submit(&b);
  ring->service();  // b waits in the kernel
  ring->submit(&a);
  ring->submit(&c);
  CHECK(ring->pending() == 3);

  for (int round = 0; round < 10 && ring->pending() != 0; ++round) ring->wait(1s);

  REQUIRE(log.size() == 4);
  CHECK(std::vector<std::string>(log.begin(), log.begin() + 2) ==
        std::vector<std::string>{"A begin", "A end"});
  std::vector<std::string> rest(log.begin() + 2, log.end());
  std::sort(rest.begin(), rest.end());
  CHECK(rest == std::vector<std::string>{"C done", "D done"});
  CHECK(b.calls == 1);
  CHECK(b.res == -ECANCELED);
  CHECK(b.buf[0] == test::kSentinel);
  CHECK(c.calls == 1);
  CHECK(d.calls == 1);
  CHECK(ring->pending() == 0);
}

TEST_CASE("uring ring: wait() with a timeout and nothing pending returns after the timeout",
          "[uring][ring]") {
  auto ring = make_ring(8);
  const auto start = std::chrono::steady_clock::now();
  CHECK(ring->wait(100ms) == 0);
  CHECK(std::chrono::steady_clock::now() - start >= 80ms);
}

TEST_CASE("uring ring: wait() with a timeout honours it while a submission is outstanding",
          "[uring][ring]") {
  // liburing 2.3 returns the number of SQEs submitted (not -ETIME) when the same
  // io_uring_enter submitted something and then timed out.
  auto ring = make_ring(8);
  Pipe pipe;
  ReadOp op(pipe.read_fd);
  ring->submit(&op);
  const auto start = std::chrono::steady_clock::now();
  CHECK(ring->wait(100ms) == 0);
  CHECK(std::chrono::steady_clock::now() - start >= 80ms);
  CHECK(op.calls == 0);
  CHECK(ring->in_flight() == 1);

  pipe.put('k');
  wait_until(*ring, [&] { return op.calls != 0; });
  CHECK(op.calls == 1);
  CHECK(op.res == 1);
  CHECK(op.buf[0] == 'k');
}

TEST_CASE("uring ring: work_visible() sees staged SQEs and queued completions without entering",
          "[uring][ring]") {
  auto ring = make_ring(8);
  CHECK_FALSE(ring->work_visible());
  Pipe pipe;
  ReadOp op(pipe.read_fd);
  ring->submit(&op);
  CHECK(ring->work_visible());  // staged, not yet submitted
  ring->service();
  REQUIRE(op.calls == 0);
  CHECK_FALSE(ring->work_visible());  // in flight, nothing to reap

  // The write queues the read's completion work for this thread; from here
  // only the rings' shared memory is read until it shows.
  pipe.put('v');
  const auto give_up = std::chrono::steady_clock::now() + 5s;
  while (!ring->work_visible() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::yield();
  }
  CHECK(ring->work_visible());
  CHECK(op.calls == 0);
  ring->service();
  CHECK(op.calls == 1);
  CHECK(op.buf[0] == 'v');
  CHECK_FALSE(ring->work_visible());
}

TEST_CASE("uring ring: service() alone reaps a burst larger than one enter's completion work",
          "[uring][ring]") {
  // The kernel runs a bounded batch of queued completion work per
  // io_uring_enter (20 items on Linux 6.13+): service(), which enters with
  // nothing to submit only while the kernel flags work, must still find the
  // rest on later calls, without a wait().
  constexpr int kReads = 100;
  auto ring = make_ring(128);  // a CQ of 256: no overflow involved
  std::vector<Pipe> pipes(kReads);
  std::vector<int> log;
  const auto reads = submit_reads(*ring, pipes, log);
  REQUIRE(ring->service() == 0);  // every read waits in the kernel
  for (int i = 0; i < kReads; ++i) pipes[i].put('b');
  std::size_t handled = 0;
  for (int calls = 0; calls < kReads && handled < kReads; ++calls) handled += ring->service();
  CHECK(handled == kReads);
  CHECK(log.size() == kReads);
  CHECK_FALSE(ring->work_visible());
}

TEST_CASE("uring ring: an internal SQE flushes a full submission queue", "[uring][ring]") {
  test::OwnedWakeSource wake;  // declared first: outlives the ring that polls it
  auto ring = make_ring(4);
  std::vector<NopOp> ops(4);
  for (NopOp& op : ops) ring->submit(&op);  // the SQ (4 entries) is now full
  wake.arm(*ring);                          // needs a fifth SQE
  CHECK(wake.armed());
  for (int round = 0; round < 10 && ring->pending() != 0; ++round) ring->wait(1s);
  for (const NopOp& op : ops) CHECK(op.calls == 1);

  wake.signal();
  for (int round = 0; round < 10 && !wake.consume(); ++round) ring->wait(1s);
  CHECK(wake.armed());
}

TEST_CASE("uring ring: destroying a ring with operations pending cancels and waits for them",
          "[uring][ring]") {
  Pipe first_pipe;
  Pipe second_pipe;
  ReadOp first(first_pipe.read_fd);
  ReadOp second(second_pipe.read_fd);
  {
    auto ring = make_ring(1);
    ring->submit(&first);
    ring->submit(&second);  // the SQ (1 entry) is full: the first goes to the kernel now
    ring->service();
    CHECK(ring->pending() == 2);
  }
  CHECK(first.calls == 1);
  CHECK(first.res == -ECANCELED);
  CHECK(second.calls == 1);
  CHECK(second.res == -ECANCELED);

  // Nothing reads on their behalf any more.
  first_pipe.put('x');
  second_pipe.put('y');
  CHECK(first_pipe.take() == 'x');
  CHECK(second_pipe.take() == 'y');
  CHECK(first.buf[0] == test::kSentinel);
  CHECK(second.buf[0] == test::kSentinel);
}

}  // namespace
}  // namespace spindle::uring
