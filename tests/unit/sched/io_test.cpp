#include <fcntl.h>
#include <liburing.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "exposition.hpp"
#include "runtime_harness.hpp"
#include "skip.hpp"

using namespace std::chrono_literals;
using spindle::errc;
namespace tf = spindle::this_fiber;

namespace {

struct Pipe {
  int r = -1, w = -1;
  Pipe() {
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    r = fds[0];
    w = fds[1];
  }
  ~Pipe() {
    ::close(r);
    ::close(w);
  }
};

// Skips the test (from the root fiber) unless the runtime uses io_uring.
void skip_unless_io_uring(const char* what) {
  const auto backend = spindle::current_runtime().io_backend();
  if (backend != "io_uring") {
    SPINDLE_SKIP("%s needs the io_uring backend; this runtime uses %.*s", what,
                 static_cast<int>(backend.size()), backend.data());
  }
}

spindle::Result<int> as_int(const spindle::Result<std::size_t>& r) {
  if (!r) return spindle::failure(r.error());
  return static_cast<int>(*r);
}

// io::read and io::write of a pipe.
spindle::Result<int> pipe_read(int fd, char* buf, unsigned len, spindle::IoOptions o = {}) {
  return as_int(spindle::io::read(fd, std::as_writable_bytes(std::span(buf, len)),
                                  spindle::io::kStreamOffset, 0, o));
}

spindle::Result<int> pipe_write(int fd, const char* buf, unsigned len, spindle::IoOptions o = {}) {
  const iovec v{const_cast<char*>(buf), len};
  return as_int(spindle::io::write(fd, std::span(&v, 1), spindle::io::kStreamOffset, 0, o));
}

}  // namespace

TEST_CASE("io reads and writes a pipe", "[io]") {
  spindle::test::on_workers([] {
    Pipe p;
    std::array<char, 16> buf{};
    auto reader = spindle::spawn([&] { return pipe_read(p.r, buf.data(), 16); });
    (void)tf::sleep_for(1ms);
    CHECK(pipe_write(p.w, "spindle", 7).value() == 7);
    CHECK(reader.join().value().value() == 7);
    CHECK(std::string(buf.data(), 7) == "spindle");
  });
}

// Writes a byte to `p` and reads it back until `stop` is set, at most
// `limit` times: operations the kernel completes at once (on io_uring within
// the fiber's own turn when nothing else is ready). Returns the round trips.
std::uint64_t loop_until(Pipe& p, const std::atomic<bool>& stop, std::uint64_t limit) {
  std::uint64_t n = 0;
  char c = 0;
  while (!stop.load() && n < limit) {
    REQUIRE(pipe_write(p.w, "x", 1).value() == 1);
    REQUIRE(pipe_read(p.r, &c, 1).value() == 1);
    ++n;
  }
  return n;
}

TEST_CASE("a fiber whose I/O completes at once still lets timers and other fibers run", "[io]") {
  spindle::test::on_workers(
      [] {
        Pipe p;
        std::atomic<bool> woke{false};
        auto sleeper = spindle::spawn([&] {
          (void)tf::sleep_for(2ms);
          woke = true;
        });
        // Without a turn budget the loop would run to its limit (minutes)
        // before the sleeper's timer is looked at.
        const std::uint64_t n = loop_until(p, woke, 2'000'000);
        CHECK(woke.load());
        CHECK(n < 2'000'000);
        CHECK(sleeper.join());
      },
      {1});
}

TEST_CASE("a fiber whose I/O completes at once still sees a wake from another thread", "[io]") {
  spindle::test::on_workers(
      [] {
        Pipe p;
        spindle::Channel<int> ch(1);
        std::atomic<bool> received{false};
        auto receiver = spindle::spawn([&] {
          received = ch.recv().value() == 7;
          return received.load();
        });
        REQUIRE(tf::yield());  // the receiver parks
        std::atomic<bool> sent{false};
        std::thread sender([&] {
          std::this_thread::sleep_for(2ms);
          sent = ch.send(7).has_value();
        });
        const std::uint64_t n = loop_until(p, received, 2'000'000);
        sender.join();
        CHECK(sent.load());
        CHECK(n < 2'000'000);
        CHECK(receiver.join().value());
      },
      {1, 2});
}

TEST_CASE("an aborted fiber's I/O that completes at once fails at the next call", "[io][abort]") {
  spindle::test::on_workers(
      [] {
        Pipe p;
        std::error_code ended;  // why the loop ended; read after the join
        auto looper = spindle::spawn([&] {
          char c = 0;
          for (std::uint64_t i = 0; i < 2'000'000; ++i) {
            auto w = pipe_write(p.w, "x", 1);
            if (!w) return void(ended = w.error());
            auto r = pipe_read(p.r, &c, 1);
            if (!r) return void(ended = r.error());
          }
        });
        (void)tf::sleep_for(2ms);
        looper.abort();
        const auto r = looper.join();
        REQUIRE_FALSE(r);
        CHECK(r.error() == errc::aborted);
        CHECK(ended == errc::aborted);
      },
      {1});
}

TEST_CASE("io_op runs any SQE on the ring", "[io]") {
  spindle::test::on_workers([] {
    skip_unless_io_uring("io_op");
    Pipe p;
    std::array<char, 16> buf{};
    auto reader = spindle::spawn([&] {
      return spindle::io_op([&](io_uring_sqe* sqe) noexcept {
        io_uring_prep_read(sqe, p.r, buf.data(), static_cast<unsigned>(buf.size()), 0);
      });
    });
    (void)tf::sleep_for(1ms);
    CHECK(spindle::io_op([&](io_uring_sqe* sqe) noexcept {
            io_uring_prep_write(sqe, p.w, "spindle", 7, 0);
          }).value() == 7);
    CHECK(reader.join().value().value() == 7);
    CHECK(std::string(buf.data(), 7) == "spindle");
  });
}

TEST_CASE("io_op's SQE holds nothing of the request that used it before", "[io]") {
  spindle::test::on_workers(
      [] {
        skip_unless_io_uring("io_op");
        // A ring of two SQEs: the third preparation reuses the first's entry.
        // Each NOP asking for a provided buffer fails (NOP takes none); a NOP
        // whose SQE is set by hand, opcode only, must not inherit that flag.
        for (int i = 0; i < 2; ++i) {
          auto r = spindle::io_op([](io_uring_sqe* sqe) noexcept {
            io_uring_prep_nop(sqe);
            sqe->flags = IOSQE_BUFFER_SELECT;
          });
          REQUIRE_FALSE(r);
          CHECK(r.error() == std::errc::operation_not_supported);
        }
        for (int i = 0; i < 2; ++i) {
          CHECK(spindle::io_op([](io_uring_sqe* sqe) noexcept {
                  sqe->opcode = IORING_OP_NOP;
                }).value() == 0);
        }
      },
      {1}, spindle::Config{.ring_entries = 2});
}

TEST_CASE("yield_to_io runs the fibers whose operations completed first", "[io]") {
  spindle::test::on_workers(
      [] {
        // On epoll a read of a ready pipe completes without parking.
        skip_unless_io_uring("a read that parks although its data is there");
        Pipe p;
        REQUIRE(::write(p.w, "x", 1) == 1);  // the read completes when submitted
        char c = 0;
        bool read = false;  // one worker: no race
        auto reader = spindle::spawn([&] {
          auto r = pipe_read(p.r, &c, 1);
          read = true;
          return r;
        });
        REQUIRE(tf::yield());  // the reader queues its read and parks
        REQUIRE_FALSE(read);
        REQUIRE(tf::yield_to_io());
        CHECK(read);
        CHECK(c == 'x');
        CHECK(reader.join().value().value() == 1);
      },
      {1});
}

TEST_CASE("expect_completions holds the worker's wake for the count or the deadline", "[io]") {
  spindle::test::on_workers(
      [] {
        skip_unless_io_uring("expect_completions, a hint to the ring's wait,");
        using spindle::Clock;
        Pipe a, b;
        std::array<char, 4> abuf{}, bbuf{};
        // Each reader returns when its read came back to it.
        auto reader = [](Pipe& p, std::array<char, 4>& buf) {
          return spindle::spawn([&p, &buf] {
            CHECK(pipe_read(p.r, buf.data(), 4).value_or(-1) == 4);
            return Clock::now();
          });
        };
        std::atomic<bool> a_done{false};

        // One of two reads completes: its fiber resumes at the deadline.
        auto ra = reader(a, abuf);
        auto rb = reader(b, bbuf);
        REQUIRE(tf::yield());  // both post their reads and park
        std::thread first([&] {
          std::this_thread::sleep_for(20ms);
          CHECK(::write(a.w, "ping", 4) == 4);
        });
        const auto deadline = Clock::now() + 200ms;
        tf::expect_completions(2, deadline);
        CHECK(ra.join().value() >= deadline);
        first.join();  // done long before the deadline
        REQUIRE(::write(b.w, "ping", 4) == 4);
        REQUIRE(rb.join());

        // Both complete: the first resumes only once the second is in.
        ra = reader(a, abuf);
        rb = reader(b, bbuf);
        REQUIRE(tf::yield());
        std::atomic<Clock::time_point> second_written{};
        std::thread both([&] {
          std::this_thread::sleep_for(20ms);
          CHECK(::write(a.w, "ping", 4) == 4);
          std::this_thread::sleep_for(20ms);
          second_written = Clock::now();
          CHECK(::write(b.w, "ping", 4) == 4);
        });
        const auto start = Clock::now();
        tf::expect_completions(2, start + 10s);
        const auto a_resumed = ra.join().value();
        REQUIRE(rb.join());
        both.join();
        CHECK(a_resumed >= second_written.load());
        CHECK(a_resumed - start < 5s);

        // The hint has lapsed: each completion wakes the worker again.
        ra = spindle::spawn([&] {
          CHECK(pipe_read(a.r, abuf.data(), 4).value_or(-1) == 4);
          a_done = true;
          return Clock::now();
        });
        rb = reader(b, bbuf);
        REQUIRE(tf::yield());
        std::thread in_turn([&] {
          CHECK(::write(a.w, "ping", 4) == 4);
          const auto give_up = Clock::now() + 10s;
          while (!a_done && Clock::now() < give_up) std::this_thread::sleep_for(1ms);
          CHECK(a_done);  // resumed before the second read completed
          CHECK(::write(b.w, "ping", 4) == 4);
        });
        REQUIRE(ra.join());
        REQUIRE(rb.join());
        in_turn.join();
      },
      {1});
}

TEST_CASE("yield_to_io of an aborted fiber fails at once", "[io][abort]") {
  spindle::test::on_workers([] {
    std::optional<spindle::Result<void>> r;  // written by the fiber, read after its join
    std::atomic<bool> started{false};
    auto h = spindle::spawn([&] {
      started = true;
      while (!tf::aborted()) (void)tf::sleep_for(1ms);
      r = tf::yield_to_io();
    });
    while (!started) (void)tf::yield();
    h.abort();
    (void)h.join();
    REQUIRE(r.has_value());
    REQUIRE_FALSE(*r);
    CHECK(r->error() == errc::aborted);
  });
}

TEST_CASE("io_op on the epoll backend fails at once with errc::unsupported", "[io]") {
  if (const char* env = std::getenv("SPINDLE_IO_BACKEND"); env && std::string(env) == "io_uring") {
    SPINDLE_SKIP("SPINDLE_IO_BACKEND=io_uring overrides Config::io_backend");
  }
  spindle::test::run(
      [] {
        CHECK(spindle::current_runtime().io_backend() == "epoll");
        auto r = spindle::io_op([](io_uring_sqe* sqe) noexcept { io_uring_prep_nop(sqe); });
        REQUIRE_FALSE(r);
        CHECK(r.error() == errc::unsupported);
        CHECK(spindle::io::nop());  // the typed calls work there
      },
      spindle::Config{.io_backend = spindle::IoBackendKind::kEpoll});
}

TEST_CASE("io reports the kernel's errno", "[io]") {
  spindle::test::run([] {
    char c;
    auto r = pipe_read(-1, &c, 1);
    REQUIRE_FALSE(r);
    CHECK(r.error() == std::errc::bad_file_descriptor);
  });
}

TEST_CASE("a deadline cancels the read, and the buffer is left alone afterwards", "[io]") {
  spindle::test::on_workers([] {
    Pipe p;
    std::array<char, 8> buf{};
    const auto t0 = spindle::Clock::now();
    auto r = pipe_read(p.r, buf.data(), 8, {.deadline = spindle::Clock::now() + 20ms});
    REQUIRE_FALSE(r);
    CHECK(r.error() == errc::timed_out);
    CHECK(spindle::Clock::now() - t0 >= 20ms);
    // The cancelled read consumed nothing: the next writer's bytes go to the next reader.
    CHECK(pipe_write(p.w, "abc", 3).value() == 3);
    std::array<char, 8> next{};
    CHECK(pipe_read(p.r, next.data(), 8).value() == 3);
    CHECK(std::string(next.data(), 3) == "abc");
    CHECK(buf == std::array<char, 8>{});
  });
}

TEST_CASE("a timeout starts when the operation waits, and its deadline goes to the call's limit",
          "[io]") {
  spindle::test::on_workers([] {
    Pipe p;
    std::array<char, 8> buf{};
    // Bytes already there. The epoll backend's read completes without
    // waiting, and the call's limit keeps its timeout; io_uring's waits for
    // its completion, and the limit takes the deadline.
    CHECK(pipe_write(p.w, "abc", 3).value() == 3);
    spindle::Timeout::Limit quick{.timeout = 20ms};
    const auto before = spindle::Clock::now();
    CHECK(pipe_read(p.r, buf.data(), 8,
                    {.deadline = quick.deadline, .timeout = quick.timeout, .call_limit = &quick})
              .value() == 3);
    if (spindle::current_runtime().io_backend() == "epoll") {
      CHECK(quick.timeout == 20ms);
      CHECK(quick.deadline == spindle::kNoDeadline);
    } else {
      CHECK(quick.timeout == std::chrono::nanoseconds::max());
      CHECK(quick.deadline >= before + 20ms);
      CHECK(quick.deadline <= spindle::Clock::now() + 20ms);
    }
    // Nothing there: the read waits, its deadline 20 ms after the wait began.
    spindle::Timeout::Limit limit{.timeout = 20ms};
    const auto t0 = spindle::Clock::now();
    auto r =
        pipe_read(p.r, buf.data(), 8,
                  {.deadline = limit.deadline, .timeout = limit.timeout, .call_limit = &limit});
    const auto t1 = spindle::Clock::now();
    REQUIRE_FALSE(r);
    CHECK(r.error() == errc::timed_out);
    CHECK(t1 - t0 >= 20ms);
    CHECK(limit.timeout == std::chrono::nanoseconds::max());
    CHECK(limit.deadline >= t0 + 20ms);
    CHECK(limit.deadline <= t1);
    // An earlier deadline wins over the timeout.
    const auto t2 = spindle::Clock::now();
    r = pipe_read(p.r, buf.data(), 8, {.deadline = t2 + 10ms, .timeout = 10s});
    REQUIRE_FALSE(r);
    CHECK(r.error() == errc::timed_out);
    CHECK(spindle::Clock::now() - t2 < 5s);
  });
}

TEST_CASE("a timeout that is not positive fails the operation without trying it", "[io]") {
  spindle::test::on_workers([] {
    Pipe p;
    CHECK(pipe_write(p.w, "abc", 3).value() == 3);
    std::array<char, 8> buf{};
    for (const auto t : {std::chrono::nanoseconds::zero(), std::chrono::nanoseconds(-1)}) {
      auto r = pipe_read(p.r, buf.data(), 8, {.timeout = t});
      REQUIRE_FALSE(r);
      CHECK(r.error() == errc::timed_out);
    }
    // Nothing was read.
    CHECK(pipe_read(p.r, buf.data(), 8).value() == 3);
  });
}

TEST_CASE("abort of a fiber blocked in a read cancels it and awaits its completion",
          "[io][abort]") {
  spindle::test::on_workers([] {
    Pipe p;
    std::array<char, 8> buf{};
    auto h = spindle::spawn([&] { return pipe_read(p.r, buf.data(), 8); });
    (void)tf::sleep_for(2ms);
    h.abort();
    auto r = h.join();
    REQUIRE_FALSE(r);
    CHECK(r.error() == errc::aborted);
    // The read was really cancelled in the kernel: data written now is not
    // swallowed by it.
    CHECK(pipe_write(p.w, "xyz", 3).value() == 3);
    std::array<char, 8> next{};
    CHECK(pipe_read(p.r, next.data(), 8).value() == 3);
    CHECK(buf == std::array<char, 8>{});
  });
}

TEST_CASE("an aborted fiber's cancellable op fails at once, its write still completes",
          "[io][abort]") {
  spindle::test::on_workers([] {
    Pipe p;
    // Fill the pipe so a write blocks in the kernel.
    REQUIRE(::fcntl(p.w, F_SETFL, O_NONBLOCK) == 0);
    std::vector<char> junk(1 << 16, 'j');
    std::size_t queued = 0;
    for (;;) {
      const ssize_t n = ::write(p.w, junk.data(), junk.size());
      if (n <= 0) break;
      queued += static_cast<std::size_t>(n);
    }
    REQUIRE(::fcntl(p.w, F_SETFL, 0) == 0);
    const std::string tail = "tail-bytes";
    auto h = spindle::spawn([&]() -> std::pair<int, int> {
      // Never cancelled: returns only when the kernel took the bytes.
      auto w =
          pipe_write(p.w, tail.data(), static_cast<unsigned>(tail.size()), {.cancellable = false});
      char c;
      auto r = pipe_read(p.r, &c, 1);  // aborted by now: fails at once
      return {w ? *w : -1, r ? 1 : (r.error() == errc::aborted ? 0 : -2)};
    });
    (void)tf::sleep_for(5ms);
    h.abort();
    (void)tf::sleep_for(5ms);
    CHECK_FALSE(h.is_finished());  // still parked in the write
    // Drain the pipe (plain blocking reads, so off the workers): the write can
    // now finish.
    std::vector<char> sink(queued + tail.size());
    auto drained = spindle::spawn_blocking([&] {
      std::size_t got = 0;
      while (got < sink.size()) {
        const ssize_t n = ::read(p.r, sink.data() + got, sink.size() - got);
        if (n <= 0) return false;
        got += static_cast<std::size_t>(n);
      }
      return true;
    });
    REQUIRE(drained.join().value());
    CHECK(std::string(sink.end() - static_cast<long>(tail.size()), sink.end()) == tail);
    // The task was aborted, so its value is not reported; it did run to completion.
    CHECK(h.join().error() == errc::aborted);
  });
}

TEST_CASE("an operation beyond max_io_in_flight fails at once with io_limit", "[io]") {
  spindle::test::run(
      [] {
        constexpr int kLimit = 4;
        std::array<Pipe, kLimit> pipes;
        std::array<std::array<char, 4>, kLimit> bufs{};
        std::vector<spindle::JoinHandle<int>> readers;
        for (int i = 0; i < kLimit; ++i) {
          readers.push_back(
              spindle::spawn([&, i] { return pipe_read(pipes[i].r, bufs[i].data(), 4).value(); }));
        }
        (void)tf::sleep_for(2ms);  // one worker: every reader is parked in its read
        Pipe extra;
        char buf[4];
        CHECK(pipe_read(extra.r, buf, 4).error() == errc::io_limit);
        CHECK(spindle::test::metric_value(spindle::current_runtime().metrics_text(),
                                          "runtime_io_limit_refusals_total") == 1.0);
        // Once one read ends, there is room again.
        REQUIRE(::write(pipes[0].w, "ping", 4) == 4);
        CHECK(readers[0].join().value() == 4);
        REQUIRE(::write(extra.w, "pong", 4) == 4);
        CHECK(pipe_read(extra.r, buf, 4).value() == 4);
        CHECK(std::string(buf, 4) == "pong");
        for (int i = 1; i < kLimit; ++i) REQUIRE(::write(pipes[i].w, "ping", 4) == 4);
        for (int i = 1; i < kLimit; ++i) CHECK(readers[i].join().value() == 4);
      },
      spindle::Config{.workers = 1, .max_io_in_flight = 4});
}

TEST_CASE("a deadline beyond the timing wheel's horizon times out at the deadline", "[io]") {
  // Both network timeouts 20 ms: the wheel's horizon is about 20 ms ahead.
  spindle::test::run(
      [] {
        Pipe p;
        char buf[4];
        const auto start = spindle::Clock::now();
        auto r = pipe_read(p.r, buf, 4, {.deadline = start + 200ms});
        const auto waited = spindle::Clock::now() - start;
        CHECK(r.error() == errc::timed_out);
        CHECK(waited >= 200ms);
      },
      spindle::Config{.workers = 1, .connect_timeout = 20ms, .read_write_timeout = 20ms});
}

TEST_CASE("many concurrent file writes and reads from many fibers", "[io]") {
  spindle::test::on_workers([] {
    const int fd = ::open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    std::vector<spindle::JoinHandle<bool>> hs;
    for (int i = 0; i < 64; ++i) {
      hs.push_back(spindle::spawn([fd, i] {
        std::array<char, 512> out, in{};
        out.fill(static_cast<char>('A' + i % 26));
        for (int k = 0; k < 8; ++k) {
          const auto off = static_cast<std::uint64_t>((i * 8 + k) * 512);
          const iovec v{out.data(), out.size()};
          auto w = spindle::io::write(fd, std::span(&v, 1), off, 0, {.cancellable = false});
          auto r = spindle::io::read(fd, std::as_writable_bytes(std::span(in)), off);
          if (w.value_or(0) != 512 || r.value_or(0) != 512 || in != out) return false;
        }
        return true;
      }));
    }
    for (auto& h : hs) CHECK(h.join().value());
    ::close(fd);
  });
}
