// file_randread: 32 fibers each read random 4 KiB blocks of one blob through
// storage/'s Blob::read_at (one READ on the worker's ring per call). The
// parent writes the blob, makes it durable and reads it once before the
// first measurement, so every read is served from the page cache and no
// writeback runs during the measurements. Every block carries its own number
// at both ends, so a read of the wrong place or a torn block fails the run.

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <spindle/spindle.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "measure.hpp"
#include "scratch.hpp"
#include "workloads.hpp"

namespace spindle::perf {
namespace {

constexpr std::string_view kPartition = "perf";
constexpr std::string_view kBlobName = "randread";

// splitmix64: a fiber's own random block numbers.
std::uint64_t next_random(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::string hex(std::string_view s) {
  std::string out;
  for (unsigned char c : s) out += fmt::format("{:02x}", c);
  return out;
}

}  // namespace

std::filesystem::path randread_file(const Params& p) {
  // storage.hpp's layout: <directory>/<partition>/<lowercase hex of the name>.
  return p.randread_dir / kPartition / hex(kBlobName);
}

std::shared_ptr<void> prepare_randread(Params& p) {
  const std::uint64_t bytes = p.sizes.randread_bytes;
  check(bytes >= (std::size_t{1} << 20) && (bytes & (bytes - 1)) == 0,
        "file_randread: the file size {} is not a power of two of at least 1 MiB", bytes);
  auto dir = std::make_shared<ScratchDir>();
  p.randread_dir = dir->path();
  fmt::print(stderr, "[spindle-perf] file_randread: writing a {} MiB file in {}\n", bytes >> 20,
             dir->path().string());
  std::filesystem::create_directory(dir->path() / kPartition);
  // storage.hpp's blob layout: the header, then the data.
  const storage::HeaderBytes header = storage::encode_header(0);
  make_stamped_file(randread_file(p), header, bytes, "file_randread");
  return dir;
}

Row spindle_file_randread(const Params& p) {
  const std::uint64_t per_fiber = p.sizes.randread_reads / kRandReadInFlight;
  const std::uint64_t n = per_fiber * kRandReadInFlight;
  const std::uint64_t mask = p.sizes.randread_bytes / kBlock - 1;  // blocks are a power of 2
  Runtime rt(Config{.workers = p.workers, .stack_size = p.stack_size});
  const auto [t, verified] = rt.run([&p, per_fiber, mask] {
    const auto store = storage::Storage::open_directory(p.randread_dir).value();
    const storage::Blob blob = store.open(kPartition, kBlobName).value().blob;
    std::vector<JoinHandle<std::uint64_t>> hs;
    hs.reserve(kRandReadInFlight);
    const Stopwatch sw;
    for (std::size_t f = 0; f < kRandReadInFlight; ++f) {
      hs.push_back(spindle::spawn([&blob, per_fiber, mask, f] {
        std::uint64_t state = f, ok = 0;
        alignas(kBlock) std::array<std::byte, kBlock> buf;
        for (std::uint64_t i = 0; i < per_fiber; ++i) {
          const std::uint64_t b = next_random(state) & mask;
          if (auto r = blob.read_at(b * kBlock, buf); !r) {
            throw PerfError(
                fmt::format("file_randread: reading block {}: {}", b, r.error().message()));
          }
          check(stamped(buf.data(), b), "file_randread: block {} reads back wrong", b);
          ++ok;
        }
        return ok;
      }));
    }
    std::uint64_t sum = 0;
    for (auto& h : hs) sum += h.join().value();
    return std::pair{sw.stop(), sum};
  });
  check(verified == n, "file_randread: {} of {} reads complete and correct", verified, n);
  Row r = make_row("file_randread", "spindle", p, n, t, "reads/s");
  r.set("fibers", static_cast<double>(kRandReadInFlight));
  r.set("file_mib", static_cast<double>(p.sizes.randread_bytes >> 20));
  return r;
}

}  // namespace spindle::perf
