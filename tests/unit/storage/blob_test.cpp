// Blob conformance (the reference's storage suite): read/write, read past the
// end, overwrite, large offsets, resize then reopen, vectored and sync writes,
// zero-length operations, clones, concurrent readers on several workers, a
// sync write leaving its worker free, and shutdown completing a write started
// by an aborted fiber.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "skip.hpp"
#include "spindle/storage/storage.hpp"
#include "storage_support.hpp"

using namespace std::chrono_literals;
using spindle::errc;
using spindle::storage::Blob;
using spindle::storage::Storage;
using spindle::test::bytes;
using spindle::test::str;
using spindle::test::TempDir;

namespace {

// A fresh Storage and one blob in it, for bodies run by on_workers.
struct Fixture {
  Storage st;
  Blob blob;
};
Fixture fixture(TempDir& tmp, std::string_view name = "blob") {
  auto st = Storage::open_directory(tmp.fresh()).value();
  auto blob = st.open("p", name).value().blob;
  return {st, blob};
}

std::string pattern(std::size_t n, std::uint32_t seed) {
  std::string s(n, '\0');
  std::mt19937 rng(seed);
  for (auto& c : s) c = static_cast<char>(rng());
  return s;
}

// Whether pages of a synced file in `dir` leave memory on POSIX_FADV_DONTNEED
// (they do not on tmpfs), checked with mincore.
// Asks the kernel to drop the pages of `path` (clean: written and synced)
// from the page cache; true if none stayed resident. The request is best
// effort: a page something else holds at that moment stays.
bool drop_cached(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  REQUIRE(fd >= 0);
  const auto len = static_cast<std::size_t>(::lseek(fd, 0, SEEK_END));
  bool dropped = ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
  if (dropped && len > 0) {
    void* map = ::mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0);
    REQUIRE(map != MAP_FAILED);
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    std::vector<unsigned char> resident((len + page - 1) / page);
    REQUIRE(::mincore(map, len, resident.data()) == 0);
    ::munmap(map, len);
    dropped = std::none_of(resident.begin(), resident.end(), [](unsigned char r) { return r & 1; });
  }
  ::close(fd);
  return dropped;
}

// True if the file system under `dir` drops pages on request (tmpfs does not).
bool page_cache_drops(const std::filesystem::path& dir) {
  const auto path = dir / "probe";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  REQUIRE(fd >= 0);
  const std::string data(64 * 1024, 'x');
  REQUIRE(::pwrite(fd, data.data(), data.size(), 0) == static_cast<ssize_t>(data.size()));
  REQUIRE(::fsync(fd) == 0);
  ::close(fd);
  const bool drops = drop_cached(path);
  std::filesystem::remove(path);
  return drops;
}

}  // namespace

TEST_CASE("write then read back sequentially and appended", "[storage][blob]") {
  TempDir tmp;
  spindle::test::on_workers([&] {
    auto [st, blob] = fixture(tmp);
    std::string all;
    std::uint64_t at = 0;
    for (int i = 0; i < 50; ++i) {
      const std::string rec = "record-" + std::to_string(i) + ";";
      REQUIRE(blob.write_at(at, rec));
      at += rec.size();
      all += rec;
    }
    CHECK(blob.size().value() == all.size());
    CHECK(str(blob.read(0, all.size()).value()) == all);
    // Read back piecewise, in order.
    std::string pieces;
    for (std::uint64_t off = 0; off < all.size(); off += 7) {
      const std::size_t n = std::min<std::size_t>(7, all.size() - off);
      pieces += str(blob.read(off, n).value());
    }
    CHECK(pieces == all);
    // Into a caller's buffer.
    std::string buf(6, '\0');
    REQUIRE(blob.read_at(0, std::span(buf)));
    CHECK(buf == "record");
  });
}

TEST_CASE("reading past the end is insufficient_length", "[storage][blob]") {
  TempDir tmp;
  spindle::test::on_workers([&] {
    auto [st, blob] = fixture(tmp);
    CHECK(blob.read(0, 1).error() == errc::insufficient_length);  // empty blob
    REQUIRE(blob.write_at(0, "0123456789"));
    CHECK(blob.read(0, 10).has_value());
    CHECK(blob.read(5, 6).error() == errc::insufficient_length);
    CHECK(blob.read(10, 1).error() == errc::insufficient_length);
    CHECK(blob.read(1000, 1).error() == errc::insufficient_length);
    CHECK(blob.read(0, 11).error() == errc::insufficient_length);
  });
}

TEST_CASE("overwrites and overlapping writes replace bytes in place", "[storage][blob]") {
  TempDir tmp;
  spindle::test::on_workers([&] {
    auto [st, blob] = fixture(tmp);
    REQUIRE(blob.write_at(0, "aaaaaaaa"));
    REQUIRE(blob.write_at(2, "bbbb"));
    REQUIRE(blob.write_at(4, "cccc"));
    CHECK(str(blob.read(0, 8).value()) == "aabbcccc");
    REQUIRE(blob.write_at(6, "dddd"));  // overlaps the end and extends
    CHECK(str(blob.read(0, 10).value()) == "aabbccdddd");
    CHECK(blob.size().value() == 10);
  });
}

TEST_CASE("writes at large offsets leave a hole of zeros - overflow is rejected",
          "[storage][blob]") {
  TempDir tmp;
  spindle::test::on_workers([&] {
    auto [st, blob] = fixture(tmp);
    const std::uint64_t far = std::uint64_t{10} << 30;  // 10 GiB, sparse
    REQUIRE(blob.write_at(far, "far away"));
    CHECK(blob.size().value() == far + 8);
    CHECK(str(blob.read(far, 8).value()) == "far away");
    CHECK(str(blob.read(far - 4, 4).value()) == std::string(4, '\0'));
    CHECK(str(blob.read(0, 4).value()) == std::string(4, '\0'));
    // Vectored at a large offset too.
    const std::span<const std::byte> chunks[] = {bytes("ab"), bytes("cd")};
    REQUIRE(blob.write_at(far + 8, chunks));
    CHECK(str(blob.read(far, 12).value()) == "far awayabcd");
    // Past what a file offset can hold.
    const std::uint64_t max = std::uint64_t{1} << 63;
    CHECK(blob.write_at(max, "x").error() == std::errc::value_too_large);
    CHECK(blob.write_at(~std::uint64_t{0} - 1, "xyz").error() == std::errc::value_too_large);
    CHECK(blob.read(max - 1, 2).error() == std::errc::value_too_large);
    CHECK(blob.resize(max).error() == std::errc::value_too_large);
    REQUIRE(blob.resize(0));
  });
}

TEST_CASE("resize truncates and grows - a reopen sees the new length", "[storage][blob]") {
  TempDir tmp;
  spindle::test::on_workers([&] {
    auto [st, blob] = fixture(tmp);
    REQUIRE(blob.write_at(0, "0123456789"));
    REQUIRE(blob.resize(4));
    REQUIRE(blob.sync());
    CHECK(blob.size().value() == 4);
    CHECK(blob.read(0, 5).error() == errc::insufficient_length);
    {
      auto o = st.open("p", "blob").value();
      CHECK(o.len == 4);
      CHECK(str(o.blob.read(0, 4).value()) == "0123");
    }
    REQUIRE(blob.resize(5000));
    REQUIRE(blob.sync());
    auto o = st.open("p", "blob").value();
    CHECK(o.len == 5000);
    CHECK(str(o.blob.read(0, 8).value()) == std::string("0123") + std::string(4, '\0'));
    CHECK(str(o.blob.read(4999, 1).value()) == std::string(1, '\0'));
    REQUIRE(blob.resize(0));
    CHECK(st.open("p", "blob").value().len == 0);
  });
}

TEST_CASE("vectored writes put chunks back to back", "[storage][blob]") {
  TempDir tmp;
  spindle::test::on_workers([&] {
    auto [st, blob] = fixture(tmp);
    const std::span<const std::byte> chunks[] = {bytes("one,"), bytes(""), bytes("two,"),
                                                 bytes("three")};
    REQUIRE(blob.write_at(3, chunks, {.sync = true}));
    CHECK(str(blob.read(0, 16).value()) == std::string(3, '\0') + "one,two,three");
    // More chunks than one WRITEV takes (IOV_MAX): written in several, sync at the end.
    std::vector<std::string> parts;
    for (int i = 0; i < 2500; ++i) parts.push_back(std::to_string(i % 10));
    std::vector<std::span<const std::byte>> many;
    for (const auto& p : parts) many.push_back(bytes(p));
    REQUIRE(blob.write_at(0, many, {.sync = true}));
    std::string want;
    for (const auto& p : parts) want += p;
    CHECK(str(blob.read(0, want.size()).value()) == want);
  });
}

TEST_CASE("sync writes syncs and the dont_cache hint", "[storage][blob][sync]") {
  TempDir tmp;
  spindle::test::on_workers([&] {
    auto [st, blob] = fixture(tmp);
    const std::string big = pattern(1 << 20, 7);
    REQUIRE(blob.write_at(0, big, {.sync = true}));
    REQUIRE(blob.write_at(big.size(), "tail", {.sync = true, .dont_cache = true}));
    REQUIRE(blob.sync());
    std::string back(big.size() + 4, '\0');
    REQUIRE(blob.read_at(0, std::span(back), {.dont_cache = true}));
    CHECK(back == big + "tail");
    // Syncs from many fibers at once (serialized per open) all succeed.
    std::vector<spindle::JoinHandle<spindle::Result<void>>> hs;
    for (int i = 0; i < 16; ++i) {
      hs.push_back(spindle::spawn([b = blob, i] {
        if (auto w = b.write_at(static_cast<std::uint64_t>(i), "z"); !w) return w;
        return b.sync();
      }));
    }
    for (auto& h : hs) CHECK(h.join().value().has_value());
  });
}

TEST_CASE("a sync write leaves its worker free for other fibers", "[storage][blob][sync]") {
  // With one worker, a fiber passing through the ring again and again keeps
  // its pace while another fiber makes small sync writes. They overwrite
  // cached bytes, which XFS and btrfs would copy inline and then wait for the
  // disk inside io_uring_enter if the SQE allowed it. (TMPDIR picks the file
  // system.)
  TempDir tmp;
  spindle::test::run(
      [&] {
        if (const auto backend = spindle::current_runtime().io_backend(); backend != "io_uring") {
          SPINDLE_SKIP(
              "the sync writes' IOSQE_ASYNC marking is io_uring's; on %.*s they run on "
              "the blocking pool",
              static_cast<int>(backend.size()), backend.data());
        }
        auto [st, blob] = fixture(tmp);
        REQUIRE(blob.write_at(0, pattern(1 << 20, 10)));
        REQUIRE(blob.sync());
        // Passes per millisecond of a fiber alone, then beside the writes.
        auto pace = [](auto&& beside) {
          std::atomic<bool> done{false};
          std::int64_t passes = 0;
          auto spinner = spindle::spawn([&] {
            while (!done.load() && spindle::this_fiber::yield_to_io()) ++passes;
          });
          const auto start = spindle::Clock::now();
          beside();
          const auto took = spindle::Clock::now() - start;
          done = true;
          REQUIRE(spinner.join());
          return static_cast<double>(passes) /
                 std::max<double>(1, std::chrono::duration<double, std::milli>(took).count());
        };
        const double alone = pace([] { REQUIRE(spindle::this_fiber::sleep_for(50ms)); });
        const std::string page = pattern(4096, 11);
        const double beside = pace([&] {
          for (std::uint64_t i = 0; i < 200; ++i) {
            REQUIRE(blob.write_at(i * 4096, page, {.sync = true}));
          }
        });
        INFO("passes per ms: " << alone << " alone, " << beside << " beside the sync writes");
        CHECK(beside >= alone / 4);
      },
      spindle::Config{.workers = 1});
}

TEST_CASE("zero-length reads and writes succeed without touching the blob", "[storage][blob]") {
  TempDir tmp;
  spindle::test::on_workers([&] {
    auto [st, blob] = fixture(tmp);
    REQUIRE(blob.write_at(0, "abc"));
    CHECK(blob.read_at(0, std::span<std::byte>()).has_value());
    CHECK(blob.read_at(1000, std::span<std::byte>()).has_value());  // even past the end
    CHECK(blob.read(~std::uint64_t{0}, 0).value().empty());
    CHECK(blob.write_at(1000, "").has_value());
    CHECK(blob.write_at(~std::uint64_t{0}, "", {.sync = true}).has_value());
    const std::span<const std::byte> empties[] = {bytes(""), bytes("")};
    CHECK(blob.write_at(500, empties).has_value());
    CHECK(blob.write_at(500, std::span<const std::span<const std::byte>>()).has_value());
    CHECK(blob.size().value() == 3);
  });
}

TEST_CASE("copies of a Blob share one open - a second open is independent", "[storage][blob]") {
  TempDir tmp;
  spindle::test::on_workers([&] {
    auto [st, blob] = fixture(tmp);
    Blob copy = blob;
    REQUIRE(copy.write_at(0, "shared"));
    CHECK(str(blob.read(0, 6).value()) == "shared");
    auto other = st.open("p", "blob").value();
    CHECK(other.len == 6);
    REQUIRE(other.blob.write_at(6, "!"));
    CHECK(str(blob.read(0, 7).value()) == "shared!");
    CHECK_FALSE(Blob());
    CHECK(blob);
  });
}

TEST_CASE("concurrent readers on several workers see the right bytes", "[storage][blob]") {
  TempDir tmp;
  spindle::test::on_workers([&] {
    auto [st, blob] = fixture(tmp);
    const std::string data = pattern(1 << 20, 42);
    REQUIRE(blob.write_at(0, data));
    std::atomic<int> bad{0};
    std::vector<spindle::JoinHandle<void>> readers;
    for (int r = 0; r < 16; ++r) {
      readers.push_back(spindle::spawn([&, copy = blob, r] {
        std::mt19937 rng(static_cast<unsigned>(r));
        std::string buf;
        for (int i = 0; i < 200; ++i) {
          const std::size_t off = rng() % data.size();
          const std::size_t len = 1 + rng() % std::min<std::size_t>(8192, data.size() - off);
          buf.resize(len);
          auto res = copy.read_at(off, std::span(buf));
          if (!res || buf != std::string_view(data).substr(off, len)) ++bad;
          if (i % 50 == 0) (void)spindle::this_fiber::yield();
        }
      }));
    }
    for (auto& h : readers) REQUIRE(h.join());
    CHECK(bad == 0);
  });
}

TEST_CASE("a read in an aborted fiber returns aborted - its writes still complete",
          "[storage][blob][abort]") {
  TempDir tmp;
  spindle::test::on_workers([&] {
    auto [st, blob] = fixture(tmp);
    REQUIRE(blob.write_at(0, "before"));
    spindle::Event started;
    spindle::Event never;
    std::atomic<bool> read_aborted{false};
    std::atomic<bool> write_ok{false};
    auto h = spindle::spawn([&, b = blob] {
      started.set();
      (void)never.wait();  // the abort ends this wait
      auto r = b.read(0, 6);
      read_aborted = !r && r.error() == errc::aborted;
      write_ok = b.write_at(6, "+after", {.sync = true}).has_value();
    });
    REQUIRE(started.wait());
    h.abort();
    (void)h.join();
    CHECK(read_aborted.load());
    CHECK(write_ok.load());
    CHECK(blob.size().value() == 12);
    CHECK(str(blob.read(0, 12).value()) == "before+after");
  });
}

TEST_CASE("shutdown completes a write started by an aborted fiber", "[storage][blob][shutdown]") {
  TempDir tmp;
  const auto dir = tmp.fresh();
  const std::string big = pattern(4 << 20, 3);  // long enough to be in flight at shutdown
  for (std::size_t workers : {1, 2, 4}) {
    INFO("workers = " << workers);
    const std::string name = "w" + std::to_string(workers);
    std::atomic<bool> writer_returned{false};
    spindle::test::run(
        [&] {
          auto st = Storage::open_directory(dir).value();
          auto blob = st.open("p", name).value().blob;
          spindle::Event started;
          // A child of the root: aborted when the root returns, mid-write.
          spindle::spawn([&, blob] {
            started.set();
            auto w = blob.write_at(0, big, {.sync = true});
            writer_returned = w.has_value();
          }).detach();
          REQUIRE(started.wait());
          // The root returns at once: shutdown aborts the writer and must wait for it.
        },
        spindle::Config{.workers = workers});
    CHECK(writer_returned);
    spindle::test::run([&] {
      auto st = Storage::open_directory(dir).value();
      auto o = st.open("p", name).value();
      CHECK(o.len == big.size());
      std::string back(big.size(), '\0');
      REQUIRE(o.blob.read_at(0, std::span(back)));
      CHECK(back == big);
    });
  }
}

TEST_CASE("a deadline scope cuts short a blob read still waiting for the blocking pool",
          "[storage][blob][deadline_scope]") {
  // On the epoll backend a read the page cache cannot serve at once goes to
  // the blocking pool; its one thread is held, so the read waits for it, and
  // only the scope can end the wait.
  TempDir tmp;
  if (!page_cache_drops(tmp.path())) {
    SPINDLE_SKIP(
        "the file system under %s keeps dropped pages in memory (tmpfs?): no read "
        "there can be made to wait for the pool",
        tmp.path().c_str());
  }
  spindle::Config config;
  config.io_backend = spindle::IoBackendKind::kEpoll;
  config.blocking_threads = 1;
  spindle::test::on_workers(
      [&] {
        auto [st, blob] = fixture(tmp);
        const std::string data = pattern(256 * 1024, 11);
        REQUIRE(blob.write_at(0, data));
        REQUIRE(blob.sync());
        std::atomic<bool> release{false};
        std::atomic<bool> holding{false};
        auto holder = spindle::spawn_blocking([&] {
          holding = true;
          while (!release.load()) std::this_thread::sleep_for(1ms);
        });
        // The holder reads `release` until it is told to stop: this frame
        // outlives it, whichever way the test leaves.
        struct Stop {
          std::atomic<bool>& release;
          spindle::JoinHandle<void>& holder;
          ~Stop() {
            if (release.exchange(true)) return;  // already stopped and joined
            (void)holder.join_uninterruptible();
          }
        } stop{release, holder};
        REQUIRE(spindle::test::eventually([&] { return holding.load(); }));
        std::string buf(data.size(), '\0');
        // Clean pages leave the page cache on request (no privilege needed),
        // unless the kernel holds one at that moment: then ask again. A page
        // back in the cache by the time of the read (the read then ends at
        // once) sends the test round again.
        std::optional<decltype(blob.read_at(0, std::span(buf)))> r;
        for (int round = 0; round < 10 && !r; ++round) {
          for (const auto& e : std::filesystem::recursive_directory_iterator(tmp.path())) {
            if (!e.is_regular_file()) continue;
            if (!spindle::test::eventually([&] { return drop_cached(e.path()); })) {
              SPINDLE_SKIP("the kernel kept pages of %s in the page cache after every request",
                           e.path().c_str());
            }
          }
          const auto start = spindle::Clock::now();
          auto read = spindle::this_fiber::with_timeout(
              20ms, [&] { return blob.read_at(0, std::span(buf)); });
          if (read) {
            CHECK(buf == data);
            buf.assign(data.size(), '\0');
            continue;
          }
          CHECK(spindle::Clock::now() - start >= 20ms);
          r = std::move(read);
        }
        if (!r) SPINDLE_SKIP("every read found the blob's pages back in the page cache");
        CHECK(r->error() == errc::timed_out);
        release = true;
        holder.join().value();
        // Withdrawn before it ran, it read nothing; now it reads everything.
        CHECK(buf == std::string(data.size(), '\0'));
        REQUIRE(blob.read_at(0, std::span(buf)));
        CHECK(buf == data);
      },
      {1, 2}, config);
}
