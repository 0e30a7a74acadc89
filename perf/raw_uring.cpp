// The I/O baselines: minimal raw liburing loops, no fibers and no runtime, on
// rings set up as spindle's (raw_ring.hpp).

#include <fcntl.h>
#include <liburing.h>
#include <unistd.h>

#include <barrier>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "measure.hpp"
#include "raw_ring.hpp"
#include "workloads.hpp"

namespace spindle::perf {
namespace {

// Keeps `depth` NOPs in flight until `ops` have completed: fill the SQ, one
// io_uring_submit_and_wait for at least one CQE, reap every CQE there is.
// Returns the NOPs that completed with 0.
std::uint64_t nop_loop(RawRing& ring, std::uint64_t ops, unsigned depth) {
  std::uint64_t issued = 0, done = 0, ok = 0;
  unsigned inflight = 0;
  while (done < ops) {
    while (inflight < depth && issued < ops) {
      io_uring_prep_nop(ring.sqe());
      ++issued;
      ++inflight;
    }
    ring.submit_and_wait(1);
    unsigned head, seen = 0;
    io_uring_cqe* cqe;
    io_uring_for_each_cqe(ring.get(), head, cqe) {
      if (cqe->res == 0) ++ok;
      ++seen;
    }
    io_uring_cq_advance(ring.get(), seen);
    done += seen;
    inflight -= seen;
  }
  return ok;
}

}  // namespace

// depth 1: one thread, one ring, one NOP in flight (the 1-fiber case is serial
// whatever the worker count). depth 64: one thread and ring per worker, each
// keeping 64 / workers NOPs in flight, so the baseline has the same cores as
// the runtime it is compared with.
Row raw_nop(const Params& p, std::size_t depth) {
  const std::uint64_t n = p.sizes.nop_ops / depth * depth;
  const std::size_t threads = depth == 1 ? 1 : std::min(p.workers, depth);
  const auto per_depth = static_cast<unsigned>(depth / threads);
  std::vector<std::uint64_t> ok(threads, 0);
  std::vector<std::string> errors(threads);
  // The clock starts when every thread has its ring (the barrier's completion).
  std::optional<Stopwatch> sw;
  std::barrier start(static_cast<std::ptrdiff_t>(threads), [&sw]() noexcept { sw.emplace(); });
  auto body = [&](std::size_t t) {
    std::unique_ptr<RawRing> ring;
    try {
      ring = std::make_unique<RawRing>();
    } catch (const std::exception& e) {
      errors[t] = e.what();
    }
    start.arrive_and_wait();
    if (!ring) return;
    try {
      ok[t] = nop_loop(*ring, n / threads + (t == 0 ? n % threads : 0), per_depth);
    } catch (const std::exception& e) {
      errors[t] = e.what();
    }
  };
  std::vector<std::jthread> helpers;
  for (std::size_t t = 1; t < threads; ++t) helpers.emplace_back(body, t);
  body(0);
  for (auto& h : helpers) h.join();
  const Timing t = sw->stop();
  for (const auto& e : errors) check(e.empty(), "raw nop: {}", e);
  std::uint64_t sum = 0;
  for (auto v : ok) sum += v;
  check(sum == n, "raw nop: {} of {} NOPs completed with 0", sum, n);
  Row r = make_row(depth == 1 ? "nop_1" : "nop_64", "raw-uring", p, n, t, "ops/s");
  r.set("depth", static_cast<double>(depth));
  r.set("rings", static_cast<double>(threads));
  return r;
}

// One thread, one ring, two pipes, the same four operations per round trip as
// the two fibers: write a byte into one pipe and read it from the other end,
// then the same back through the second pipe. The write goes first in each
// submission, so the read finds its byte and completes inline: the best order
// a single thread can pick (the fibers cannot: the reader is always parked
// before the writer writes).
Row raw_pipe_pingpong(const Params& p) {
  const std::uint64_t rounds = p.sizes.pipe_rounds;
  int ab[2], ba[2];
  if (::pipe2(ab, O_CLOEXEC) != 0) throw std::system_error(errno, std::system_category(), "pipe2");
  if (::pipe2(ba, O_CLOEXEC) != 0) {
    ::close(ab[0]);
    ::close(ab[1]);
    throw std::system_error(errno, std::system_category(), "pipe2");
  }
  RawRing ring;
  std::uint64_t verified = 0;
  // Sends `out` from wfd to rfd; returns the byte read, or -1.
  auto hop = [&ring](int wfd, int rfd, unsigned char out) -> int {
    unsigned char in = 0;
    io_uring_sqe* w = ring.sqe();
    io_uring_prep_write(w, wfd, &out, 1, 0);
    io_uring_sqe_set_data64(w, 1);
    io_uring_sqe* r = ring.sqe();
    io_uring_prep_read(r, rfd, &in, 1, 0);
    io_uring_sqe_set_data64(r, 2);
    ring.submit_and_wait(2);
    int got = 0;
    bool ok = true;
    for (int i = 0; i < 2; ++i) {
      io_uring_cqe* cqe = nullptr;
      if (io_uring_peek_cqe(ring.get(), &cqe) != 0 || cqe == nullptr) return -1;
      ok = ok && cqe->res == 1;
      ++got;
      io_uring_cqe_seen(ring.get(), cqe);
    }
    return ok && got == 2 ? in : -1;
  };
  const Stopwatch sw;
  for (std::uint64_t i = 0; i < rounds; ++i) {
    const auto out = static_cast<unsigned char>(i);
    const int mid = hop(ab[1], ab[0], out);
    if (mid < 0) break;
    const int back = hop(ba[1], ba[0], static_cast<unsigned char>(mid));
    if (back != out) break;
    ++verified;
  }
  const Timing t = sw.stop();
  for (int fd : {ab[0], ab[1], ba[0], ba[1]}) ::close(fd);
  check(verified == rounds, "raw pipe_pingpong: {} of {} round trips verified", verified, rounds);
  Row r = make_row("pipe_pingpong", "raw-uring", p, rounds, t, "round trips/s");
  r.set("rings", 1);
  return r;
}

}  // namespace spindle::perf
