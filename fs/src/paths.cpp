#include "spindle/fs/paths.hpp"

#include <fcntl.h>
#include <stdio.h>

#include <vector>

#include "io_options.hpp"
#include "stat_convert.hpp"

namespace spindle::fs {
namespace {

Result<Stat> stat_at(const std::filesystem::path& path, int flags, const char* op) {
  struct statx st{};
  if (auto r = io::statx(AT_FDCWD, path.c_str(), flags, detail::kStatMask, &st); !r) {
    return detail::fail(r.error(), op, path);
  }
  return detail::to_stat(st);
}

unsigned rename_flags(Rename how) noexcept {
  switch (how) {
    case Rename::kNoReplace:
      return RENAME_NOREPLACE;
    case Rename::kExchange:
      return RENAME_EXCHANGE;
    case Rename::kReplace:
      break;
  }
  return 0;
}

}  // namespace

Result<void> create_dir(const std::filesystem::path& path, mode_t mode) {
  if (auto r = io::mkdirat(AT_FDCWD, path.c_str(), mode); !r) {
    return detail::fail(r.error(), "mkdir", path);
  }
  return {};
}

Result<void> create_dirs(const std::filesystem::path& path, mode_t mode) {
  // From `path` up to the first ancestor that exists, then down again: one
  // mkdir per level when only the last is missing.
  std::vector<std::filesystem::path> missing;
  for (std::filesystem::path p = path.has_filename() ? path : path.parent_path();;) {
    auto r = io::mkdirat(AT_FDCWD, p.c_str(), mode);
    if (r) break;
    if (r.error() == std::errc::file_exists) {
      if (!missing.empty()) break;  // an ancestor: the mkdir below says if it is no directory
      auto st = fs::stat(p);
      if (!st) return std::unexpected(std::move(st.error()));
      if (st->is_directory()) return {};
      return detail::fail(r.error(), "mkdir", p);
    }
    const std::filesystem::path parent = p.parent_path();
    if (r.error() != std::errc::no_such_file_or_directory || parent.empty() || parent == p) {
      return detail::fail(r.error(), "mkdir", p);
    }
    missing.push_back(std::move(p));
    p = parent;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    auto r = io::mkdirat(AT_FDCWD, it->c_str(), mode);
    // Made by someone else meanwhile: fine if a directory, and the next
    // mkdir says ENOTDIR if not.
    if (!r && r.error() != std::errc::file_exists) return detail::fail(r.error(), "mkdir", *it);
  }
  return {};
}

Result<void> rename(const std::filesystem::path& from, const std::filesystem::path& to,
                    Rename how) {
  if (auto r = io::renameat(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), rename_flags(how)); !r) {
    return detail::fail(r.error(), "rename", from, to);
  }
  return {};
}

Result<void> remove_file(const std::filesystem::path& path) {
  if (auto r = io::unlinkat(AT_FDCWD, path.c_str(), 0); !r) {
    return detail::fail(r.error(), "unlink", path);
  }
  return {};
}

Result<void> remove_dir(const std::filesystem::path& path) {
  if (auto r = io::unlinkat(AT_FDCWD, path.c_str(), AT_REMOVEDIR); !r) {
    return detail::fail(r.error(), "rmdir", path);
  }
  return {};
}

Result<Stat> stat(const std::filesystem::path& path) { return stat_at(path, 0, "stat"); }

Result<Stat> lstat(const std::filesystem::path& path) {
  return stat_at(path, AT_SYMLINK_NOFOLLOW, "lstat");
}

Result<bool> exists(const std::filesystem::path& path) {
  auto st = fs::stat(path);
  if (st) return true;
  if (st.error() == std::errc::no_such_file_or_directory ||
      st.error() == std::errc::not_a_directory) {
    return false;
  }
  return std::unexpected(std::move(st.error()));
}

}  // namespace spindle::fs
