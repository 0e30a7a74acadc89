#include "scratch.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include "measure.hpp"
#include "unique_fd.hpp"

namespace spindle::perf {
namespace {

// The unit of the writes and reads of make_stamped_file.
constexpr std::size_t kChunk = std::size_t{1} << 20;

void pwrite_all(int fd, const std::byte* data, std::size_t len, std::uint64_t offset,
                std::string_view what) {
  while (len > 0) {
    const ssize_t n = ::pwrite(fd, data, len, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw_errno(fmt::format("{}: writing the file", what));
    data += n;
    len -= static_cast<std::size_t>(n);
    offset += static_cast<std::uint64_t>(n);
  }
}

std::filesystem::path make_temp_dir() {
  const char* tmp = std::getenv("TMPDIR");
  const std::filesystem::path base = tmp != nullptr && *tmp != '\0' ? tmp : "/var/tmp";
  std::string templ = (base / "spindle-perf-XXXXXX").string();
  if (::mkdtemp(templ.data()) == nullptr) throw_errno("mkdtemp " + templ);
  return templ;
}

}  // namespace

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

ScratchDir::ScratchDir() : path_(make_temp_dir()) {}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

void make_stamped_file(const std::filesystem::path& file, std::span<const std::byte> header,
                       std::uint64_t bytes, std::string_view what) {
  check(bytes % kBlock == 0, "{}: the file size {} is not a multiple of 4 KiB", what, bytes);
  UniqueFd fd(::open(file.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
  if (!fd) throw_errno(fmt::format("{}: creating {}", what, file.string()));
  pwrite_all(fd.get(), header.data(), header.size(), 0, what);
  std::vector<std::byte> chunk(kChunk);
  for (std::uint64_t off = 0; off < bytes; off += kChunk) {
    const std::size_t len = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, bytes - off));
    for (std::size_t b = 0; b < len; b += kBlock) stamp(chunk.data() + b, (off + b) / kBlock);
    pwrite_all(fd.get(), chunk.data(), len, header.size() + off, what);
  }
  if (::fdatasync(fd.get()) != 0) throw_errno(fmt::format("{}: fdatasync {}", what, file.string()));
  for (std::uint64_t off = 0; off < bytes; off += kChunk) {
    const std::size_t len = static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, bytes - off));
    const ssize_t n = ::pread(fd.get(), chunk.data(), len, static_cast<off_t>(header.size() + off));
    if (n < 0) throw_errno(fmt::format("{}: reading {}", what, file.string()));
    check(static_cast<std::size_t>(n) == len, "{}: short read of {} at {}", what, file.string(),
          off);
    for (std::size_t b = 0; b < len; b += kBlock) {
      check(stamped(chunk.data() + b, (off + b) / kBlock), "{}: block {} of {} reads back wrong",
            what, (off + b) / kBlock, file.string());
    }
  }
}

void write_text_file(const std::filesystem::path& file, std::string_view text,
                     std::string_view what) {
  std::ofstream out(file, std::ios::trunc);
  out << text;
  out.close();
  check(bool(out), "{}: cannot write {}", what, file.string());
}

}  // namespace spindle::perf
