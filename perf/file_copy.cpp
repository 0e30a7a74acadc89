// file_copy: one file copied within its directory, by spindle::fs::copy_file
// (splices through a pipe, all made by one blocking-pool task on either
// backend) and by `cp --reflink=never` (a real copy of the bytes, never a
// shared extent). The parent writes the source once, syncs it and reads it
// back, so both copies read from the page cache; neither side syncs its copy
// (cp does not), so both measure copying into the page cache. Each run writes a new file, checks
// its size and some of its blocks, and removes it, so the dirty pages of one run never pile up
// under the next.

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <spindle/spindle.hpp>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "measure.hpp"
#include "programs.hpp"
#include "scratch.hpp"
#include "unique_fd.hpp"
#include "workloads.hpp"

namespace spindle::perf {
namespace {

constexpr std::string_view kWhat = "file_copy";
// Blocks of a copy that are read back and checked: the first, the last, and
// evenly spaced ones between.
constexpr std::uint64_t kSampledBlocks = 16;

// This run's copy, beside the source under a name no other run uses (the
// measurement process's id); removed when the run ends, however it ends.
class Destination {
 public:
  explicit Destination(const Params& p)
      : path_(p.copy_source.parent_path() / fmt::format("copy-{}", ::getpid())) {
    remove();
  }
  Destination(const Destination&) = delete;
  Destination& operator=(const Destination&) = delete;
  ~Destination() { remove(); }
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  void remove() noexcept {
    std::error_code ignored;
    std::filesystem::remove(path_, ignored);
  }

  std::filesystem::path path_;
};

// The copy has the source's size, and its sampled blocks are stamped right.
void check_copy(const std::filesystem::path& copy, std::uint64_t bytes) {
  UniqueFd fd(::open(copy.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw_errno(fmt::format("{}: opening the copy {}", kWhat, copy.string()));
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) throw_errno(fmt::format("{}: fstat {}", kWhat, copy.string()));
  check(static_cast<std::uint64_t>(st.st_size) == bytes, "{}: the copy has {} bytes, not {}", kWhat,
        st.st_size, bytes);
  const std::uint64_t blocks = bytes / kBlock;
  alignas(kBlock) std::array<std::byte, kBlock> buf;
  for (std::uint64_t i = 0; i < kSampledBlocks; ++i) {
    const std::uint64_t b = i * (blocks - 1) / (kSampledBlocks - 1);
    const ssize_t n = ::pread(fd.get(), buf.data(), kBlock, static_cast<off_t>(b * kBlock));
    if (n < 0) throw_errno(fmt::format("{}: reading the copy", kWhat));
    check(static_cast<std::size_t>(n) == kBlock && stamped(buf.data(), b),
          "{}: block {} of the copy differs from the source's", kWhat, b);
  }
}

Row copy_row(std::string impl, const Params& p, Timing t) {
  return make_row(std::string(kWhat), std::move(impl), p, p.sizes.copy_bytes >> 20, t, "MiB/s");
}

}  // namespace

std::shared_ptr<void> prepare_file_copy(Params& p) {
  const std::uint64_t bytes = p.sizes.copy_bytes;
  check(bytes >= kSampledBlocks * kBlock, "{}: the file size {} is below {} blocks", kWhat, bytes,
        kSampledBlocks);
  auto dir = std::make_shared<ScratchDir>();
  p.copy_source = dir->path() / "source";
  fmt::print(stderr, "[spindle-perf] {}: writing a {} MiB file in {}\n", kWhat, bytes >> 20,
             dir->path().string());
  make_stamped_file(p.copy_source, {}, bytes, kWhat);
  return dir;
}

Row spindle_file_copy(const Params& p) {
  const Destination dst(p);
  Runtime rt(Config{.workers = p.workers, .stack_size = p.stack_size});
  const auto [t, copied] = rt.run([&p, &dst] {
    const Stopwatch sw;
    auto n = fs::copy_file(p.copy_source, dst.path());
    if (!n) throw PerfError(fmt::format("{}: {}", kWhat, n.error().message()));
    return std::pair{sw.stop(), *n};
  });
  check(copied == p.sizes.copy_bytes, "{}: copy_file copied {} of {} bytes", kWhat, copied,
        p.sizes.copy_bytes);
  check_copy(dst.path(), p.sizes.copy_bytes);
  return copy_row("spindle", p, t);
}

std::string cp_missing() {
  const std::string cp = find_on_path("cp");
  if (cp.empty()) return "cp is not installed (no cp on PATH)";
  Program probe(cp, {"--reflink=never", "--version"},
                {.capture_stdout = false, .merge_stderr = true});
  if (!probe.wait().ok()) return fmt::format("{} does not accept --reflink=never", cp);
  return "";
}

Row cp_file_copy(const Params& p) {
  const std::string cp = find_on_path("cp");
  check(!cp.empty(), "{}: {}", kWhat, cp_missing());
  const Destination dst(p);
  const Stopwatch sw;
  Program copy(cp, {"--reflink=never", p.copy_source.string(), dst.path().string()},
               {.capture_stdout = false});
  const ProgramExit e = copy.wait();
  // The wall time from the fork to the reaping; the CPU time is cp's own.
  Timing t = sw.stop();
  t.cpu_seconds = e.cpu_s;
  check(e.ok(), "{}: cp {}", kWhat, describe_status(e.status));
  check_copy(dst.path(), p.sizes.copy_bytes);
  return copy_row("cp", p, t);
}

}  // namespace spindle::perf
