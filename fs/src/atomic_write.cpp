// write_file_atomic: the temporary file, the rename, the directory sync.
// Once the temporary file is open nothing is cancelled, so an abort either
// changes nothing or lets the replacement complete.
#include "atomic_write.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string_view>

#include "io_options.hpp"
#include "spindle/base/time.hpp"
#include "spindle/fs/file.hpp"
#include "spindle/fs/whole_file.hpp"

namespace spindle::fs {
namespace detail {
namespace {

// Names tried before giving up on EEXIST (another writer's temporary file).
constexpr int kTempAttempts = 16;
// The part of the target's name a temporary name keeps: with the suffix it
// stays under NAME_MAX (255).
constexpr std::size_t kNameKept = 200;

// A name no other writer is likely to pick at the same moment: the pid, a
// counter and the clock, mixed (splitmix64). O_EXCL makes a clash an EEXIST.
std::string temp_name(std::string_view name) {
  static std::atomic<std::uint64_t> counter{0};
  std::uint64_t x = counter.fetch_add(1, std::memory_order_relaxed) ^
                    (static_cast<std::uint64_t>(::getpid()) << 40) ^
                    static_cast<std::uint64_t>(Clock::now().time_since_epoch().count());
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return fmt::format(".{}.{:016x}.tmp", name.substr(0, kNameKept), x);
}

// Removes the temporary file (never cancelled; a failure leaves it behind).
void discard(const StagedFile& staged) {
  (void)io::unlinkat(staged.dir.get(), staged.temp.c_str(), 0);
}

// Writes, syncs and closes the temporary file.
Result<void> fill(File file, std::span<const std::byte> data) {
  if (auto r = file.write_all(data); !r) return r;
  if (auto r = file.fsync(); !r) return r;
  return file.close();
}

}  // namespace

Result<StagedFile> stage(const std::filesystem::path& target, std::span<const std::byte> data,
                         mode_t mode) {
  StagedFile s;
  s.target = target;
  s.name = target.filename().string();
  if (s.name.empty()) {
    return fail(std::make_error_code(std::errc::is_a_directory), "write_file_atomic", target);
  }
  s.dir_path = target.parent_path();
  if (s.dir_path.empty()) s.dir_path = ".";
  auto dir = io::openat(AT_FDCWD, s.dir_path.c_str(), O_RDONLY | O_DIRECTORY, 0);
  if (!dir) return fail(dir.error(), "open", s.dir_path);
  s.dir = UniqueFd(*dir);
  for (int attempt = 1;; ++attempt) {
    s.temp = temp_name(s.name);
    auto fd = io::openat(s.dir.get(), s.temp.c_str(), O_WRONLY | O_CREAT | O_EXCL, mode);
    if (fd) {
      if (auto r = fill(File(UniqueFd(*fd), s.dir_path / s.temp), data); !r) {
        discard(s);
        return std::unexpected(std::move(r.error()));
      }
      return s;
    }
    if (fd.error() != std::errc::file_exists || attempt == kTempAttempts) {
      return fail(fd.error(), "open", s.dir_path / s.temp);
    }
  }
}

Result<void> commit(const StagedFile& staged) {
  auto r =
      io::renameat(staged.dir.get(), staged.temp.c_str(), staged.dir.get(), staged.name.c_str(), 0);
  if (!r) {
    discard(staged);
    return fail(r.error(), "rename", staged.dir_path / staged.temp, staged.target);
  }
  return {};
}

Result<void> sync_directory(const StagedFile& staged) {
  if (auto r = io::fsync(staged.dir.get(), false); !r) {
    return fail(r.error(), "fsync", staged.dir_path);
  }
  return {};
}

}  // namespace detail

Result<void> write_file_atomic(const std::filesystem::path& path, std::span<const std::byte> data,
                               mode_t mode) {
  auto staged = detail::stage(path, data, mode);
  if (!staged) return std::unexpected(std::move(staged.error()));
  if (auto r = detail::commit(*staged); !r) return r;
  return detail::sync_directory(*staged);
}

}  // namespace spindle::fs
