// StaticRoot: the directory spindle-http serves files from (--root), and
// the lookup of a request path in it. A request never reaches a file
// outside the root: a path with a ".." segment is not found, and a lookup
// that a symlink would lead out of the root is forbidden, refused by the
// kernel (openat2 with RESOLVE_BENEATH from the root's descriptor, held for
// the server's life). An absolute symlink counts as leading out, even to a
// file inside. Relative symlinks that stay inside the root are followed.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string_view>
#include <utility>

#include "response.hpp"
#include "spindle/fs/file.hpp"

namespace spindle::apps::http {

// A found file, open for reading, or why there is none.
struct StaticFile {
  Status status = Status::kNotFound;  // kOk: `file` is open
  // Open O_NONBLOCK (which splice ignores): clear the flag before reading
  // it through io_uring, which may answer EAGAIN for a page not cached.
  fs::File file;
  std::uint64_t size = 0;
  std::string_view content_type;
};

// Immutable after open(): any number of fibers may call find() at once.
class StaticRoot {
 public:
  // The root `dir`, opened once (O_PATH: a base for lookups only; a
  // symlink to a directory is followed). Throws std::runtime_error naming
  // --root if it is missing or not a directory. Needs no runtime.
  static StaticRoot open(const std::filesystem::path& dir);

  // The file a request for `target` (the request-target's path, still
  // percent-encoded) names; a path ending in '/' names its index.html.
  // Fiber-only.
  // Suspends: while the file is opened.
  StaticFile find(std::string_view target) const;

 private:
  explicit StaticRoot(fs::File dir) noexcept : dir_(std::move(dir)) {}

  fs::File dir_;  // the root, O_PATH | O_DIRECTORY; only read after open()
};

// "text/html; charset=utf-8", ... by the extension of `path`;
// "application/octet-stream" for one not known.
std::string_view content_type_of(std::string_view path) noexcept;

}  // namespace spindle::apps::http
