// spindle-demo: a tour of the runtime in a few seconds. Fibers sleep, pass
// messages through channels, and do real I/O through the ring (a pipe between
// two fibers and a temporary file), written as plain blocking code.

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <span>
#include <spindle/spindle.hpp>
#include <string>
#include <vector>

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Reads exactly buf.size() bytes from the pipe fd.
spindle::Result<void> read_exact(int fd, std::span<char> buf) {
  std::size_t done = 0;
  while (done < buf.size()) {
    auto n = spindle::io::read(fd, std::as_writable_bytes(buf.subspan(done)),
                               spindle::io::kStreamOffset);
    if (!n) return spindle::failure(n.error());
    if (*n == 0) return spindle::failure(std::make_error_code(std::errc::broken_pipe));
    done += *n;
  }
  return {};
}

// Writes all of buf at `offset` (io::kStreamOffset: a pipe). Never
// cancelled: a write always finishes.
spindle::Result<void> write_all(int fd, std::span<const char> buf,
                                std::uint64_t offset = spindle::io::kStreamOffset) {
  std::size_t done = 0;
  while (done < buf.size()) {
    const iovec v{const_cast<char*>(buf.data() + done), buf.size() - done};
    auto n = spindle::io::write(fd, std::span(&v, 1),
                                offset == spindle::io::kStreamOffset ? offset : offset + done, 0,
                                {.cancellable = false});
    if (!n) return spindle::failure(n.error());
    done += *n;
  }
  return {};
}

struct Summary {
  std::size_t fibers = 0;
  std::size_t messages = 0;
  std::size_t ring_ops = 0;
};

// Fan-out: N fibers sleep a little and report to one collector over a channel.
void fan_out(std::size_t n, Summary& s) {
  const auto start = Clock::now();
  spindle::Channel<std::size_t> done(64);
  for (std::size_t i = 0; i < n; ++i) {
    spindle::spawn([i, &done] {
      std::minstd_rand rng(static_cast<unsigned>(i));
      (void)spindle::this_fiber::sleep_for(std::chrono::milliseconds(1 + rng() % 20));
      (void)done.send(i);
    });
  }
  std::size_t sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += done.recv().value();
  s.fibers += n;
  s.messages += n;
  fmt::print("fan-out     {:>7} fibers slept 1-20 ms each and reported in {:7.1f} ms (sum {})\n", n,
             ms_since(start), sum);
}

// Pipeline: producer -> 4 squarers -> summer, over bounded channels.
void pipeline(std::size_t n, Summary& s) {
  const auto start = Clock::now();
  spindle::Channel<std::uint64_t> numbers(128);
  spindle::Channel<std::uint64_t> squares(128);
  spindle::WaitGroup squarers(4);
  spindle::spawn([&] {
    for (std::uint64_t i = 1; i <= n; ++i) (void)numbers.send(i);
    numbers.close();
  });
  for (int w = 0; w < 4; ++w) {
    spindle::spawn([&] {
      while (auto v = numbers.recv()) (void)squares.send(*v * *v);
      squarers.done();
    });
  }
  spindle::spawn([&] {
    (void)squarers.wait();
    squares.close();
  });
  std::uint64_t total = 0;
  while (auto v = squares.recv()) total += *v;
  s.fibers += 6;
  s.messages += 2 * n;
  fmt::print("pipeline    {:>7} values squared by 4 fibers in        {:7.1f} ms (sum {})\n", n,
             ms_since(start), total);
}

// Two fibers bounce a message through a pipe pair, every read and write on the ring.
void pipe_ping_pong(std::size_t rounds, Summary& s) {
  const auto start = Clock::now();
  int ab[2], ba[2];
  if (::pipe2(ab, O_CLOEXEC) != 0 || ::pipe2(ba, O_CLOEXEC) != 0)
    throw std::system_error(errno, std::system_category(), "pipe2");
  auto echo = spindle::spawn([&]() -> spindle::Result<void> {
    std::array<char, 8> buf{};
    for (std::size_t i = 0; i < rounds; ++i) {
      if (auto r = read_exact(ab[0], buf); !r) return r;
      if (auto r = write_all(ba[1], buf); !r) return r;
    }
    return {};
  });
  std::array<char, 8> msg{'s', 'p', 'i', 'n', 'd', 'l', 'e', '!'};
  std::array<char, 8> back{};
  for (std::size_t i = 0; i < rounds; ++i) {
    write_all(ab[1], msg).value();
    read_exact(ba[0], back).value();
    if (back != msg) throw std::runtime_error("pipe ping-pong: message corrupted");
  }
  echo.join().value().value();
  for (int fd : {ab[0], ab[1], ba[0], ba[1]}) ::close(fd);
  s.fibers += 1;
  s.ring_ops += 4 * rounds;
  const double ms = ms_since(start);
  fmt::print("pipe        {:>7} round trips through the ring in      {:7.1f} ms ({:.1f} us each)\n",
             rounds, ms, ms * 1000.0 / static_cast<double>(rounds));
}

// Several fibers write their own regions of one temporary file, then read them back.
void file_io(std::size_t writers, std::size_t blocks, Summary& s) {
  const auto start = Clock::now();
  const int fd = ::open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (fd < 0) throw std::system_error(errno, std::system_category(), "open(/tmp, O_TMPFILE)");
  constexpr std::size_t kBlock = 4096;
  std::vector<spindle::JoinHandle<bool>> hs;
  for (std::size_t w = 0; w < writers; ++w) {
    hs.push_back(spindle::spawn([w, blocks, fd] {
      std::string block(kBlock, static_cast<char>('a' + w % 26));
      for (std::size_t b = 0; b < blocks; ++b) {
        if (!write_all(fd, block, (w * blocks + b) * kBlock)) return false;
      }
      std::string check(kBlock, '\0');
      for (std::size_t b = 0; b < blocks; ++b) {
        const auto off = (w * blocks + b) * kBlock;
        auto n = spindle::io::read(fd, std::as_writable_bytes(std::span(check)), off);
        if (!n || *n != kBlock || check != block) return false;
      }
      return true;
    }));
  }
  std::size_t ok = 0;
  for (auto& h : hs) ok += h.join().value() ? 1 : 0;
  ::close(fd);
  if (ok != writers) throw std::runtime_error("file I/O: a region read back differently");
  s.fibers += writers;
  s.ring_ops += 2 * writers * blocks;
  fmt::print("file        {:>7} KiB written and verified by {} fibers {:7.1f} ms\n",
             writers * blocks * kBlock / 1024, writers, ms_since(start));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "spindle-demo: fibers sleeping, messaging and doing ring I/O as plain blocking code"};
  std::size_t workers = 2;
  std::size_t fibers = 10000;
  std::size_t messages = 200000;
  std::size_t rounds = 20000;
  app.add_option("-w,--workers", workers, "worker threads (1-64)")->capture_default_str();
  app.add_option("-f,--fibers", fibers, "fibers in the fan-out")->capture_default_str();
  app.add_option("-m,--messages", messages, "values through the pipeline")->capture_default_str();
  app.add_option("-r,--rounds", rounds, "pipe round trips")->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    spindle::Runtime rt(spindle::Config{.workers = workers});
    const auto start = Clock::now();
    const Summary s = rt.run([&] {
      Summary sum;
      fan_out(fibers, sum);
      pipeline(messages, sum);
      pipe_ping_pong(rounds, sum);
      file_io(16, 64, sum);
      return sum;
    });
    fmt::print(
        "done: {} workers, {} fibers, {} channel messages, {} ring operations in {:.0f} ms\n",
        workers, s.fibers, s.messages, s.ring_ops, ms_since(start));
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "spindle-demo: {}\n", e.what());
    return 1;
  }
}
