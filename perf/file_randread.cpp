// file_randread: 32 fibers each read random 4 KiB blocks of one blob through
// storage/'s Blob::read_at (one READ on the worker's ring per call). The
// parent writes the blob, makes it durable and reads it once before the
// first measurement, so every read is served from the page cache and no
// writeback runs during the measurements. Every block carries its own number
// at both ends, so a read of the wrong place or a torn block fails the run.

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <spindle/spindle.hpp>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "measure.hpp"
#include "unique_fd.hpp"
#include "workloads.hpp"

namespace spindle::perf {
namespace {

constexpr std::size_t kBlock = 4096;
constexpr std::size_t kChunk = std::size_t{1} << 20;  // the parent's write and read unit
constexpr std::string_view kPartition = "perf";
constexpr std::string_view kBlobName = "randread";

[[noreturn]] void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::system_category(), what);
}

// Data block b starts with b and ends with ~b.
void stamp(std::byte* block, std::uint64_t b) {
  const std::uint64_t tail = ~b;
  std::memcpy(block, &b, 8);
  std::memcpy(block + kBlock - 8, &tail, 8);
}

bool stamped(const std::byte* block, std::uint64_t b) {
  std::uint64_t head, tail;
  std::memcpy(&head, block, 8);
  std::memcpy(&tail, block + kBlock - 8, 8);
  return head == b && tail == ~b;
}

// A temporary directory, removed with everything in it on destruction.
class ScratchDir {
 public:
  explicit ScratchDir(std::filesystem::path path) : path_(std::move(path)) {}
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

std::filesystem::path make_temp_dir() {
  const char* tmp = std::getenv("TMPDIR");
  const std::filesystem::path base = tmp != nullptr && *tmp != '\0' ? tmp : "/var/tmp";
  std::string templ = (base / "spindle-perf-XXXXXX").string();
  if (::mkdtemp(templ.data()) == nullptr) throw_errno("mkdtemp " + templ);
  return templ;
}

void pwrite_all(int fd, const std::byte* data, std::size_t len, std::uint64_t offset) {
  while (len > 0) {
    const ssize_t n = ::pwrite(fd, data, len, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw_errno("file_randread: writing the file");
    data += n;
    len -= static_cast<std::size_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
}

// A blob file as Storage::open expects it (header, then the data) with every
// data block stamped, fdatasync'ed.
void write_blob(const std::filesystem::path& file, std::uint64_t bytes) {
  UniqueFd fd(::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd) throw_errno("file_randread: creating " + file.string());
  const storage::HeaderBytes header = storage::encode_header(0);
  pwrite_all(fd.get(), header.data(), header.size(), 0);
  std::vector<std::byte> chunk(kChunk);
  for (std::uint64_t off = 0; off < bytes; off += kChunk) {
    for (std::size_t b = 0; b < kChunk; b += kBlock) stamp(chunk.data() + b, (off + b) / kBlock);
    pwrite_all(fd.get(), chunk.data(), kChunk, storage::kHeaderSize + off);
  }
  if (::fdatasync(fd.get()) != 0) throw_errno("file_randread: fdatasync");
}

// Reads the whole file once (into the page cache) and checks every block.
void read_blob(const std::filesystem::path& file, std::uint64_t bytes) {
  UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw_errno("file_randread: opening " + file.string());
  std::vector<std::byte> chunk(kChunk);
  for (std::uint64_t off = 0; off < bytes; off += kChunk) {
    const ssize_t n =
        ::pread(fd.get(), chunk.data(), kChunk, static_cast<off_t>(storage::kHeaderSize + off));
    if (n < 0) throw_errno("file_randread: reading the file");
    check(static_cast<std::size_t>(n) == kChunk, "file_randread: short read of the file at {}",
          off);
    for (std::size_t b = 0; b < kChunk; b += kBlock) {
      check(stamped(chunk.data() + b, (off + b) / kBlock),
            "file_randread: block {} of the file reads back wrong", (off + b) / kBlock);
    }
  }
}

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
  check(bytes >= kChunk && (bytes & (bytes - 1)) == 0,
        "file_randread: the file size {} is not a power of two of at least 1 MiB", bytes);
  auto dir = std::make_shared<ScratchDir>(make_temp_dir());
  p.randread_dir = dir->path();
  fmt::print(stderr, "[spindle-perf] file_randread: writing a {} MiB file in {}\n", bytes >> 20,
             dir->path().string());
  std::filesystem::create_directory(dir->path() / kPartition);
  write_blob(randread_file(p), bytes);
  read_blob(randread_file(p), bytes);
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
