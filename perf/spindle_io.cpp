// The I/O workloads on spindle: operations issued through spindle::io, the
// calls net/ and storage/ build on (one operation on the worker's backend,
// the fiber parked until it completes).

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <spindle/spindle.hpp>
#include <system_error>
#include <vector>

#include "measure.hpp"
#include "workloads.hpp"

namespace spindle::perf {
namespace {

// Two pipes, closed on destruction.
struct Pipes {
  int ab[2] = {-1, -1};  // a writes, b reads
  int ba[2] = {-1, -1};  // b writes, a reads
  Pipes() {
    if (::pipe2(ab, O_CLOEXEC) != 0 || ::pipe2(ba, O_CLOEXEC) != 0) {
      throw std::system_error(errno, std::system_category(), "pipe2");
    }
  }
  Pipes(const Pipes&) = delete;
  Pipes& operator=(const Pipes&) = delete;
  ~Pipes() {
    for (int fd : {ab[0], ab[1], ba[0], ba[1]}) {
      if (fd >= 0) ::close(fd);
    }
  }
};

Result<std::size_t> read_byte(int fd, unsigned char& b) {
  return io::read(fd, std::as_writable_bytes(std::span(&b, 1)), 0);
}

Result<std::size_t> write_byte(int fd, const unsigned char& b) {
  // A write is never cancelled (it always finishes), as in the demo's write_all.
  const iovec v{const_cast<unsigned char*>(&b), 1};
  return io::write(fd, std::span(&v, 1), 0, 0, {.cancellable = false});
}

}  // namespace

Row spindle_nop(const Params& p, std::size_t fibers) {
  const std::uint64_t per_fiber = p.sizes.nop_ops / fibers;
  const std::uint64_t n = per_fiber * fibers;
  Runtime rt(Config{.workers = p.workers, .stack_size = p.stack_size});
  const auto [t, done] = rt.run([fibers, per_fiber] {
    std::vector<JoinHandle<std::uint64_t>> hs;
    hs.reserve(fibers);
    const Stopwatch sw;
    for (std::size_t f = 0; f < fibers; ++f) {
      hs.push_back(spindle::spawn([per_fiber] {
        std::uint64_t ok = 0;
        for (std::uint64_t i = 0; i < per_fiber; ++i) {
          if (io::nop()) ++ok;
        }
        return ok;
      }));
    }
    std::uint64_t sum = 0;
    for (auto& h : hs) sum += h.join().value();
    return std::pair{sw.stop(), sum};
  });
  check(done == n, "nop: {} of {} NOPs completed with 0", done, n);
  Row r = make_row(fibers == 1 ? "nop_1" : "nop_64", "spindle", p, n, t, "ops/s");
  r.set("depth", static_cast<double>(fibers));
  return r;
}

Row spindle_pipe_pingpong(const Params& p) {
  const std::uint64_t rounds = p.sizes.pipe_rounds;
  const Pipes pipes;
  Runtime rt(Config{.workers = p.workers, .stack_size = p.stack_size});
  const auto [t, verified] = rt.run([&pipes, rounds] {
    const Stopwatch sw;
    // a: writes byte i to ab, reads the echo from ba; counts the round trips
    // whose echo matches.
    auto a = spindle::spawn([&pipes, rounds] {
      std::uint64_t ok = 0;
      for (std::uint64_t i = 0; i < rounds; ++i) {
        const auto out = static_cast<unsigned char>(i);
        unsigned char in = 0;
        if (write_byte(pipes.ab[1], out).value_or(0) != 1) break;
        if (read_byte(pipes.ba[0], in).value_or(0) != 1 || in != out) break;
        ++ok;
      }
      return ok;
    });
    // b: echoes each byte from ab back into ba.
    auto b = spindle::spawn([&pipes, rounds] {
      for (std::uint64_t i = 0; i < rounds; ++i) {
        unsigned char c = 0;
        if (read_byte(pipes.ab[0], c).value_or(0) != 1) break;
        if (write_byte(pipes.ba[1], c).value_or(0) != 1) break;
      }
      return std::uint64_t{0};
    });
    const std::uint64_t ok = a.join().value();
    b.join().value();
    return std::pair{sw.stop(), ok};
  });
  check(verified == rounds, "pipe_pingpong: {} of {} round trips verified", verified, rounds);
  return make_row("pipe_pingpong", "spindle", p, rounds, t, "round trips/s");
}

}  // namespace spindle::perf
