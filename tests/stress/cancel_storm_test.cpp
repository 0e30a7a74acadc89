// Stress: a cancellation storm. 10,000 fibers park in a ring read (ten times
// a ring's size, all of them in flight at once) while
// racer fibers, in seeded random order over 2 workers, write the data some of
// them wait for and abort them, often both at once. Afterwards nothing may be
// left behind (fds, pending operations, running tasks), and no message may be
// lost or delivered twice: each one written is either returned by exactly one
// read or still unread in its socket, never consumed by a read that then
// reported errc::aborted. Seeded: the seed is printed; SPINDLE_SEED=<n> replays it.
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <random>
#include <span>
#include <system_error>
#include <utility>
#include <vector>

#include "exposition.hpp"
#include "runtime_harness.hpp"
#include "skip.hpp"
#include "xorshift.hpp"

using namespace std::chrono_literals;
using spindle::errc;
namespace tf = spindle::this_fiber;

namespace {

std::uint64_t test_seed() {
  if (const char* s = std::getenv("SPINDLE_SEED")) return std::strtoull(s, nullptr, 10);
  return std::random_device{}();
}

#if defined(SPINDLE_TSAN)
// TSan keeps per-fiber state far larger than a fiber (and runs them ~10x
// slower): fewer readers, still more than both rings' sizes.
constexpr std::size_t kReaders = 3'000;
constexpr auto kDeadline = 240s;
#else
constexpr std::size_t kReaders = 10'000;
constexpr auto kDeadline = 120s;
#endif
// Readers share a socketpair four to one: 2,500 pairs are 5,000 fds, where
// one pair each would need 20,000 (a common hard RLIMIT_NOFILE).
constexpr std::size_t kReadersPerPair = 4;
constexpr std::size_t kPairs = kReaders / kReadersPerPair;
constexpr std::size_t kRacers = 16;

// One message: the id of a write, unique in the run. SOCK_SEQPACKET keeps
// message boundaries, so a read returns exactly one message or nothing.
using MessageId = std::uint64_t;

struct Pair {
  int reader = -1;  // the readers' end
  int writer = -1;  // the racers' end
};

// What one reader fiber saw. Written by that fiber only; read after its join.
struct ReadOutcome {
  enum Kind { kNotRun, kData, kAborted, kError } kind = kNotRun;
  int bytes = 0;
  MessageId id = 0;
  bool raced = false;  // data, though the fiber was aborted: the completion won
  std::error_code error;
};

double metric(std::string_view name) {
  return spindle::test::metric_value(spindle::current_runtime().metrics_text(), name).value_or(-1);
}

// Raises the soft RLIMIT_NOFILE to `need` if it is lower (and the hard limit
// allows it); restores it on destruction.
class FdLimit {
 public:
  explicit FdLimit(rlim_t need) {
    REQUIRE(::getrlimit(RLIMIT_NOFILE, &saved_) == 0);
    if (saved_.rlim_cur >= need) return;
    if (saved_.rlim_max < need) {
      SPINDLE_SKIP(
          "the cancellation storm needs %llu file descriptors; the hard RLIMIT_NOFILE is %llu",
          static_cast<unsigned long long>(need), static_cast<unsigned long long>(saved_.rlim_max));
    }
    rlimit raised = saved_;
    raised.rlim_cur = need;
    REQUIRE(::setrlimit(RLIMIT_NOFILE, &raised) == 0);
    restore_ = true;
  }
  ~FdLimit() {
    if (restore_) ::setrlimit(RLIMIT_NOFILE, &saved_);
  }
  FdLimit(const FdLimit&) = delete;
  FdLimit& operator=(const FdLimit&) = delete;

 private:
  rlimit saved_{};
  bool restore_ = false;
};

}  // namespace

TEST_CASE("stress: 10000 aborts racing read completions lose no data and leak nothing",
          "[stress][abort]") {
  const std::uint64_t seed = test_seed();
  std::printf("stress seed = %llu (replay with SPINDLE_SEED=%llu)\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed));
  INFO("seed " << seed);
  FdLimit limit(2 * kPairs + 1024);
  const std::size_t fds_before_runtime = spindle::test::open_fd_count();

  spindle::test::run(
      [&] {
        const std::size_t fds_baseline = spindle::test::open_fd_count();
        const double running_baseline = metric("runtime_tasks_running");
        REQUIRE(running_baseline >= 1);  // the root

        std::vector<Pair> pairs(kPairs);
        for (Pair& p : pairs) {
          int sv[2];
          REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
          p = {sv[0], sv[1]};
        }

        // The readers: each parks in one RECV through its worker's ring.
        std::vector<ReadOutcome> outcomes(kReaders);
        std::vector<spindle::JoinHandle<void>> readers;
        readers.reserve(kReaders);
        std::atomic<std::size_t> started{0};
        for (std::size_t i = 0; i < kReaders; ++i) {
          readers.push_back(spindle::spawn([&, i] {
            const int fd = pairs[i % kPairs].reader;
            std::array<char, 2 * sizeof(MessageId)> buf{};
            started.fetch_add(1, std::memory_order_relaxed);
            auto r = spindle::io::recv(fd, std::as_writable_bytes(std::span(buf)), 0);
            ReadOutcome& o = outcomes[i];
            if (r) {
              o.kind = ReadOutcome::kData;
              o.bytes = *r;
              o.raced = tf::aborted();
              if (*r == sizeof(MessageId)) std::memcpy(&o.id, buf.data(), sizeof o.id);
            } else if (r.error() == errc::aborted) {
              o.kind = ReadOutcome::kAborted;
            } else {
              o.kind = ReadOutcome::kError;
              o.error = r.error();
            }
          }));
        }
        // Every reader is parked in its operation before the storm starts.
        REQUIRE(spindle::test::eventually([&] {
          return started.load() == kReaders &&
                 metric("runtime_pending_operations") >= static_cast<double>(kReaders);
        }));

        // The racers: each takes a shuffled share of the readers and, for
        // each, writes a message to its pair, aborts it, or both in either
        // order, with yields in between so that the two land anywhere from
        // "long before" to "in the same ring turn".
        std::vector<std::size_t> order(kReaders);
        for (std::size_t i = 0; i < kReaders; ++i) order[i] = i;
        std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
        std::atomic<MessageId> next_id{1};
        std::vector<std::vector<std::pair<MessageId, std::size_t>>> written(kRacers);
        std::vector<spindle::JoinHandle<void>> racers;
        for (std::size_t k = 0; k < kRacers; ++k) {
          racers.push_back(spindle::spawn([&, k] {
            spindle::test::Xorshift rng(seed + 1 + k);
            auto write_to = [&](std::size_t reader) {
              const std::size_t p = reader % kPairs;
              const MessageId id = next_id.fetch_add(1, std::memory_order_relaxed);
              // Non-blocking: a few messages per pair never fill the socket.
              const ssize_t n =
                  ::send(pairs[p].writer, &id, sizeof id, MSG_DONTWAIT | MSG_NOSIGNAL);
              REQUIRE(n == static_cast<ssize_t>(sizeof id));
              written[k].emplace_back(id, p);
            };
            auto jitter = [&] {
              const std::uint64_t r = rng.next();
              if (r % 4 == 0) (void)tf::yield();
              if (r % 256 == 1) (void)tf::sleep_for(std::chrono::microseconds(1 + (r >> 8) % 100));
            };
            for (std::size_t j = k; j < kReaders; j += kRacers) {
              const std::size_t i = order[j];
              switch (rng.next() % 8) {
                case 0:
                case 1:
                  write_to(i);
                  break;
                case 2:
                case 3:
                  readers[i].abort();
                  break;
                case 4:
                  write_to(i);
                  readers[i].abort();
                  break;
                case 5:
                  readers[i].abort();
                  write_to(i);
                  break;
                case 6:
                  write_to(i);
                  jitter();
                  readers[i].abort();
                  break;
                default:  // two messages: one may well stay unread
                  write_to(i);
                  write_to(i);
                  break;
              }
              jitter();
            }
          }));
        }
        for (auto& r : racers) REQUIRE(r.join());

        // Whatever still waits is aborted now (racing the last deliveries),
        // then everything is joined, bounded by the deadline.
        for (auto& r : readers) r.abort();
        const auto deadline = spindle::Clock::now() + kDeadline;
        std::size_t finished = 0;
        while (finished < kReaders && spindle::Clock::now() < deadline) {
          while (finished < kReaders && readers[finished].is_finished()) ++finished;
          if (finished < kReaders) (void)tf::sleep_for(1ms);
        }
        INFO(finished << " of " << kReaders << " readers finished");
        REQUIRE(finished == kReaders);
        for (auto& r : readers) (void)r.join();  // aborted readers report errc::aborted

        // Drain what no read took.
        std::vector<std::pair<MessageId, std::size_t>> unread;
        for (std::size_t p = 0; p < kPairs; ++p) {
          MessageId id;
          for (;;) {
            const ssize_t n = ::recv(pairs[p].reader, &id, sizeof id, MSG_DONTWAIT);
            if (n < 0) {
              REQUIRE(errno == EAGAIN);
              break;
            }
            REQUIRE(n == static_cast<ssize_t>(sizeof id));
            unread.emplace_back(id, p);
          }
        }
        for (Pair& p : pairs) {
          ::close(p.reader);
          ::close(p.writer);
        }

        // Every outcome is data or aborted (or never ran: aborted before it started).
        std::size_t data = 0, raced = 0, aborted = 0, not_run = 0, errors = 0;
        std::error_code first_error;
        std::map<MessageId, std::size_t> seen;  // id -> pair it came out of
        std::size_t duplicates = 0;
        for (std::size_t i = 0; i < kReaders; ++i) {
          const ReadOutcome& o = outcomes[i];
          switch (o.kind) {
            case ReadOutcome::kData:
              ++data;
              if (o.raced) ++raced;
              CHECK(o.bytes == static_cast<int>(sizeof(MessageId)));
              if (!seen.emplace(o.id, i % kPairs).second) ++duplicates;
              break;
            case ReadOutcome::kAborted:
              ++aborted;
              break;
            case ReadOutcome::kNotRun:
              ++not_run;
              break;
            case ReadOutcome::kError:
              if (errors++ == 0) first_error = o.error;
              break;
          }
        }
        for (const auto& [id, p] : unread) {
          if (!seen.emplace(id, p).second) ++duplicates;
        }
        std::printf(
            "cancel storm: %zu readers: %zu read a message (%zu of them aborted too), "
            "%zu aborted in the read, %zu aborted before running; %zu messages unread\n",
            kReaders, data, raced, aborted, not_run, unread.size());
        INFO("first error: " << first_error.message());
        CHECK(errors == 0);
        CHECK(data > 0);
        CHECK(aborted > 0);
        CHECK(duplicates == 0);
        // Written == read + unread, message by message, each from the pair it was sent to.
        std::size_t total_written = 0, lost = 0, misrouted = 0;
        for (const auto& w : written) {
          total_written += w.size();
          for (const auto& [id, p] : w) {
            auto it = seen.find(id);
            if (it == seen.end()) {
              ++lost;
            } else if (it->second != p) {
              ++misrouted;
            }
          }
        }
        CHECK(lost == 0);
        CHECK(misrouted == 0);
        CHECK(seen.size() == total_written);

        // Nothing left behind.
        CHECK(spindle::test::open_fd_count() == fds_baseline);
        CHECK(metric("runtime_tasks_running") == running_baseline);
        // A per-worker snapshot, refreshed on each ring turn: a worker that
        // reaped the last CQE while parked publishes it on its next turn.
        CHECK(spindle::test::eventually([] { return metric("runtime_pending_operations") == 0; }));
      },
      spindle::Config{.workers = 2});
  CHECK(spindle::test::open_fd_count() == fds_before_runtime);
}
