#include "spindle/fs/read_dir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string_view>
#include <utility>

#include "spindle/sched/context.hpp"
#include "stat_convert.hpp"

namespace spindle::fs {
namespace {

struct Listing {
  int error = 0;  // errno of opening or reading the directory
  std::vector<DirEntry> entries;
};

// On a pool thread: the blocking calls.
Listing list(const std::string& path) {
  Listing out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    out.error = errno;
    return out;
  }
  DIR* d = ::fdopendir(fd);
  if (d == nullptr) {
    out.error = errno;
    ::close(fd);
    return out;
  }
  for (;;) {
    errno = 0;
    const dirent* e = ::readdir(d);
    if (e == nullptr) {
      out.error = errno;  // 0 at the end
      break;
    }
    const std::string_view name = e->d_name;
    if (name == "." || name == "..") continue;
    FileType type = detail::type_of_dirent(e->d_type);
    if (type == FileType::kUnknown) {
      struct stat st{};
      if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        type = detail::type_of_mode(st.st_mode);
      }
    }
    out.entries.push_back({std::string(name), type});
  }
  ::closedir(d);
  std::sort(out.entries.begin(), out.entries.end(),
            [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  return out;
}

}  // namespace

Result<std::vector<DirEntry>> read_dir(const std::filesystem::path& path) {
  // The task owns its copy of the path: an aborted caller stops waiting
  // while the pool thread goes on.
  auto task = spawn_blocking([p = path.string()] { return list(p); });
  auto listing = task.join();
  if (!listing) return detail::fail(listing.error(), "read_dir", path);
  if (listing->error != 0) {
    return detail::fail(std::error_code(listing->error, std::system_category()), "read_dir", path);
  }
  return std::move(listing->entries);
}

}  // namespace spindle::fs
