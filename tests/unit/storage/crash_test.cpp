// Crash durability: a child process appends records to a blob, syncing each
// batch and reporting the last synced record through a pipe, and is killed
// with SIGKILL at a random point. A new Storage then finds every synced record
// present and intact. Seeded (SPINDLE_SEED replays), bounded in time.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include "spindle/storage/crc32c.hpp"
#include "spindle/storage/storage.hpp"
#include "storage_support.hpp"

using spindle::storage::Storage;

namespace {

constexpr std::size_t kRecord = 64;

// Record i: its index, a CRC of the payload, and a payload derived from i.
std::string record(std::uint64_t i) {
  std::string r(kRecord, '\0');
  for (std::size_t k = 12; k < kRecord; ++k) r[k] = static_cast<char>('a' + (i * 31 + k) % 26);
  std::memcpy(r.data(), &i, 8);
  const std::uint32_t crc = spindle::storage::crc32c(std::string_view(r).substr(12));
  std::memcpy(r.data() + 8, &crc, 4);
  return r;
}

// The child: never returns. Reports each synced record index on `ack`.
[[noreturn]] void writer(const std::filesystem::path& dir, int ack, std::uint32_t seed) {
  spindle::Runtime rt(spindle::Config{.workers = 2});
  const int code = rt.run([&]() -> int {
    auto st = Storage::open_directory(dir);
    if (!st) return 2;
    auto o = st->open("crash", "log");
    if (!o) return 3;
    std::mt19937 rng(seed);
    std::uint64_t next = o->len / kRecord;  // 0 in a fresh directory
    // Never block the worker on the pipe: the parent drains it only at the end.
    if (::fcntl(ack, F_SETFL, O_NONBLOCK) != 0) return 7;
    int acks = 0;
    for (;;) {
      const std::uint64_t batch = 1 + rng() % 8;
      const bool dsync = rng() % 2 == 0;
      for (std::uint64_t k = 0; k < batch; ++k, ++next) {
        // Either every write is a sync write, or the batch ends with sync().
        if (!o->blob.write_at(next * kRecord, record(next), {.sync = dsync})) return 4;
      }
      if (!dsync && !o->blob.sync()) return 5;
      const std::uint64_t synced = next - 1;
      // At most 4096 acks of 8 bytes: half of a pipe's 64 KiB.
      if (acks < 4096) {
        if (::write(ack, &synced, sizeof synced) != sizeof synced) return 6;
        ++acks;
      } else {
        (void)spindle::this_fiber::sleep_for(std::chrono::milliseconds(1));
      }
    }
  });
  std::_Exit(code);
}

}  // namespace

TEST_CASE("crash - records synced before a SIGKILL are all there intact", "[storage][crash]") {
  std::uint32_t seed = std::random_device{}();
  if (const char* s = std::getenv("SPINDLE_SEED"))
    seed = static_cast<std::uint32_t>(std::strtoul(s, nullptr, 10));
  std::printf("storage crash test: SPINDLE_SEED=%u\n", seed);
  std::mt19937 rng(seed);
  spindle::test::TempDir tmp;
  const auto t0 = std::chrono::steady_clock::now();
  int loops = 0;
  // At least 20 kills; at most 60 s in all (sanitizer builds are slow).
  for (; loops < 25 &&
         (loops < 20 || std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60));
       ++loops) {
    INFO("loop " << loops << ", seed " << seed);
    // Every other loop continues the previous directory: replay plus append.
    const auto dir = tmp.path() / ("d" + std::to_string(loops / 2));
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      ::close(fds[0]);
      writer(dir, fds[1], static_cast<std::uint32_t>(rng()));
    }
    ::close(fds[1]);
    // Wait for the first synced record, then kill at a random point.
    pollfd p{fds[0], POLLIN, 0};
    REQUIRE(::poll(&p, 1, 20'000) == 1);
    ::usleep(static_cast<useconds_t>(rng() % 40'000));
    REQUIRE(::kill(pid, SIGKILL) == 0);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL));
    // The highest record the child reported synced.
    std::int64_t synced = -1;
    std::uint64_t v;
    while (::read(fds[0], &v, sizeof v) == sizeof v) synced = static_cast<std::int64_t>(v);
    ::close(fds[0]);
    REQUIRE(synced >= 0);

    // Reopen: every synced record is present and intact.
    const auto [len, bad] = spindle::test::run([&] {
      auto st = Storage::open_directory(dir).value();
      auto o = st.open("crash", "log").value();
      std::int64_t first_bad = -1;
      std::string buf(kRecord, '\0');
      for (std::int64_t i = 0; i <= synced; ++i) {
        auto r = o.blob.read_at(static_cast<std::uint64_t>(i) * kRecord, std::span(buf));
        if (!r || buf != record(static_cast<std::uint64_t>(i))) {
          first_bad = i;
          break;
        }
      }
      return std::pair<std::uint64_t, std::int64_t>{o.len, first_bad};
    });
    CHECK(len >= static_cast<std::uint64_t>(synced + 1) * kRecord);
    CHECK(bad == -1);
    // The next child appends after a whole number of records: trim a torn tail.
    if (len % kRecord != 0) {
      spindle::test::run([&] {
        auto st = Storage::open_directory(dir).value();
        REQUIRE(st.open("crash", "log").value().blob.resize(len / kRecord * kRecord));
      });
    }
  }
  CHECK(loops >= 20);
}
