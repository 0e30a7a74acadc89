// Ring::cancel: an operation completes exactly once, through its own CQE, and
// only after the cancel's CQE too, so the kernel never touches a buffer after
// on_complete.

#include <catch2/catch.hpp>
#include <chrono>

#include "spindle/uring/ring.hpp"
#include "uring_test_support.hpp"

namespace spindle::uring {
namespace {

using namespace std::chrono_literals;
using test::kSentinel;
using test::make_ring;
using test::Pipe;
using test::ReadOp;
using test::wait_until;

// Gives the kernel a few chances to (wrongly) touch something.
void settle(Ring& ring) {
  for (int i = 0; i < 3; ++i) ring.wait(10ms);
}

TEST_CASE("uring ring: an operation cancelled before its SQE reaches the kernel ends there",
          "[uring][ring][cancel]") {
  auto ring = make_ring(4);
  Pipe pipe;
  ReadOp op(pipe.read_fd);
  ring->submit(&op);
  ring->cancel(&op);  // both SQEs go in with the same io_uring_enter
  CHECK(op.calls == 0);
  wait_until(*ring, [&] { return op.calls != 0; });
  CHECK(op.calls == 1);
  CHECK(op.res == -ECANCELED);
  CHECK(ring->pending() == 0);

  pipe.put('x');  // would be consumed if the read were still in the kernel
  settle(*ring);
  CHECK(op.calls == 1);
  CHECK(op.buf[0] == kSentinel);
  CHECK(pipe.take() == 'x');
}

TEST_CASE("uring ring: cancelling an in-flight read completes it once with -ECANCELED",
          "[uring][ring][cancel]") {
  auto ring = make_ring(4);
  Pipe pipe;
  ReadOp op(pipe.read_fd);
  ring->submit(&op);
  ring->service();  // the read is now waiting in the kernel
  REQUIRE(op.state() == Operation::State::kInFlight);

  ring->cancel(&op);
  ring->cancel(&op);     // repeated: a no-op
  CHECK(op.calls == 0);  // in flight: completion only comes through the CQEs
  CHECK(op.cancel_requested());

  const std::size_t handled = wait_until(*ring, [&] { return op.calls != 0; });
  CHECK(op.calls == 1);
  CHECK(op.res == -ECANCELED);
  CHECK(handled == 2);  // the read's own CQE and the cancel's
  CHECK(ring->pending() == 0);

  pipe.put('y');
  settle(*ring);
  CHECK(op.calls == 1);
  CHECK(op.buf[0] == kSentinel);
  CHECK(pipe.take() == 'y');
}

// Frees itself in on_complete: any use of the record after on_complete (say, a
// cancel CQE handled after the operation finished) is a use-after-free that
// AddressSanitizer reports.
struct SelfDeletingRead : test::TestOp {
  SelfDeletingRead(int read_fd, int* calls_counter, int* last_res)
      : TestOp(&prep, &done), fd(read_fd), calls_out(calls_counter), res_out(last_res) {}
  static void prep(Operation* self, io_uring_sqe* sqe) noexcept {
    auto* op = static_cast<SelfDeletingRead*>(self);
    io_uring_prep_read(sqe, op->fd, op->buf, 1, 0);
  }
  static void done(Operation* self, int res, std::uint32_t) noexcept {
    auto* op = static_cast<SelfDeletingRead*>(self);
    ++*op->calls_out;
    *op->res_out = res;
    delete op;
  }
  int fd;
  int* calls_out;
  int* res_out;
  char buf[1] = {kSentinel};
};

TEST_CASE("uring ring: a cancelled operation may free its record in on_complete",
          "[uring][ring][cancel]") {
  auto ring = make_ring(4);
  Pipe pipe;
  int calls = 0;
  int res = 0;
  auto* op = new SelfDeletingRead(pipe.read_fd, &calls, &res);
  ring->submit(op);
  ring->service();
  ring->cancel(op);
  wait_until(*ring, [&] { return calls != 0; });
  CHECK(calls == 1);
  CHECK(res == -ECANCELED);
  settle(*ring);
  CHECK(calls == 1);
  CHECK(ring->pending() == 0);
}

// After a cancelled completion, re-submits itself once to read from `next_fd`.
struct ResubmittingRead : test::TestOp {
  ResubmittingRead(Ring* r, int first_fd, int second_fd)
      : TestOp(&prep, &done), ring(r), fd(first_fd), next_fd(second_fd) {}
  static void prep(Operation* self, io_uring_sqe* sqe) noexcept {
    auto* op = static_cast<ResubmittingRead*>(self);
    io_uring_prep_read(sqe, op->fd, op->buf, 1, 0);
  }
  static void done(Operation* self, int res, std::uint32_t) noexcept {
    auto* op = static_cast<ResubmittingRead*>(self);
    op->results[op->calls++] = res;
    if (op->calls == 1 && op->next_fd >= 0) {
      op->fd = op->next_fd;
      op->ring->submit(op);
    }
  }
  Ring* ring;
  int fd;
  int next_fd;
  int results[4] = {};
  char buf[1] = {kSentinel};
};

TEST_CASE("uring ring: a cancelled operation may be re-submitted from its on_complete",
          "[uring][ring][cancel]") {
  auto ring = make_ring(4);
  Pipe empty;
  Pipe full;
  full.put('r');
  ResubmittingRead op(ring.get(), empty.read_fd, full.read_fd);
  ring->submit(&op);
  ring->service();
  ring->cancel(&op);
  wait_until(*ring, [&] { return op.calls >= 2; });
  settle(*ring);
  REQUIRE(op.calls == 2);
  CHECK(op.results[0] == -ECANCELED);
  CHECK(op.results[1] == 1);  // the second submission was not hit by the first's cancel
  CHECK_FALSE(op.cancel_requested());
  CHECK(op.buf[0] == 'r');
  CHECK(ring->pending() == 0);
}

// The ordering in which the operation's own CQE is reaped before its cancel's:
// with the SQ full, staging the cancel flushes the SQ first, the read completes
// inline (its CQE lands in the CQ ring, unreaped), then the cancel goes in and
// finds nothing. The operation must still wait for the cancel's CQE; finishing
// it at its own CQE would leave that CQE to hit a freed or re-submitted record.
TEST_CASE("uring ring: an operation whose cancel lost still waits for the cancel's CQE",
          "[uring][ring][cancel]") {
  auto ring = make_ring(2);
  Pipe full;
  Pipe empty;
  full.put('w');
  test::NopOp filler;

  SECTION("the record is freed in on_complete") {
    int calls = 0;
    int res = 0;
    auto* op = new SelfDeletingRead(full.read_fd, &calls, &res);
    ring->submit(op);
    ring->submit(&filler);  // the SQ (2 entries) is full
    ring->cancel(op);
    wait_until(*ring, [&] { return calls != 0 && filler.calls != 0; });
    settle(*ring);
    CHECK(calls == 1);
    CHECK(res == 1);
  }

  SECTION("the record is re-submitted in on_complete") {
    ResubmittingRead op(ring.get(), full.read_fd, empty.read_fd);
    ring->submit(&op);
    ring->submit(&filler);
    ring->cancel(&op);
    wait_until(*ring, [&] { return op.calls != 0 && filler.calls != 0; });
    settle(*ring);
    REQUIRE(op.calls == 1);
    CHECK(op.results[0] == 1);
    CHECK(op.buf[0] == 'w');
    // The second submission is untouched by the first one's cancel.
    CHECK(op.state() == Operation::State::kInFlight);
    CHECK_FALSE(op.cancel_requested());
    CHECK(ring->pending() == 1);
    ring->cancel(&op);
    wait_until(*ring, [&] { return op.calls == 2; });
    CHECK(op.calls == 2);
    CHECK(op.results[1] == -ECANCELED);
  }
  CHECK(filler.calls == 1);
  CHECK(ring->pending() == 0);
}

TEST_CASE("uring ring: a completion racing a cancel wins", "[uring][ring][cancel]") {
  auto ring = make_ring(4);
  Pipe pipe;
  ReadOp op(pipe.read_fd);

  SECTION("data is there before the read reaches the kernel") {
    pipe.put('z');
    ring->submit(&op);
    ring->cancel(&op);  // staged behind the read in the same submission
    wait_until(*ring, [&] { return op.calls != 0; });
    settle(*ring);
    CHECK(op.calls == 1);
    CHECK(op.res == 1);
    CHECK(op.buf[0] == 'z');
  }

  SECTION("data arrives while the read waits in the kernel") {
    ring->submit(&op);
    ring->service();
    pipe.put('z');
    ring->cancel(&op);
    wait_until(*ring, [&] { return op.calls != 0; });
    settle(*ring);
    CHECK(op.calls == 1);
    // Either outcome is legal; each must be consistent with the buffer.
    if (op.res == 1) {
      CHECK(op.buf[0] == 'z');
      CHECK(pipe.take() == -1);
    } else {
      CHECK(op.res == -ECANCELED);
      CHECK(op.buf[0] == kSentinel);
      CHECK(pipe.take() == 'z');
    }
  }
  CHECK(ring->pending() == 0);
}

}  // namespace
}  // namespace spindle::uring
