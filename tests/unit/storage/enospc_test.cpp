// ENOSPC: a Storage on a 512 KiB tmpfs filled to the last page. Running out of
// space must surface as std::errc::no_space_on_device from write_at (and from
// open of a new blob), never as a crash or an exception, and lose nothing that
// was synced before: a new runtime and Storage read every synced byte back,
// and once space is freed the storage is usable again. Needs root (mount(2)):
// skips otherwise.
#include <sys/mount.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "skip.hpp"
#include "spindle/storage/storage.hpp"
#include "storage_support.hpp"

using spindle::storage::Storage;
using spindle::test::str;
using spindle::test::TempDir;

namespace {

constexpr std::size_t kChunk = 16 * 1024;
constexpr std::size_t kSyncedA = 64 * 1024;  // blob "a": written and synced first
// Far more than the tmpfs holds: reaching it means the size limit did nothing.
constexpr std::size_t kMaxChunks = 1024;

// The byte at data offset `at` of a blob salted with `salt`.
std::string pattern(std::size_t at, std::size_t len, char salt) {
  std::string s(len, '\0');
  for (std::size_t k = 0; k < len; ++k)
    s[k] = static_cast<char>((((at + k) * 131) ^ static_cast<std::size_t>(salt)) % 251);
  return s;
}

// A tmpfs of `size` mounted on `dir` for the object's life (unmounted on every
// path out of the test, exceptions included). Skips unless the process may mount.
class TmpfsMount {
 public:
  TmpfsMount(const std::filesystem::path& dir, const char* size) : dir_(dir) {
    const std::string options = std::string("size=") + size;
    if (::mount("tmpfs", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0) {
      const int err = errno;
      if (err == EPERM || err == EACCES) {
        ::rmdir(dir.c_str());  // SPINDLE_SKIP exits: no destructor runs
        SPINDLE_SKIP("mount(2) of a tmpfs was refused (%s): CAP_SYS_ADMIN is needed",
                     std::strerror(err));
      }
      FAIL("mount tmpfs on " << dir << ": " << std::strerror(err));
    }
  }
  ~TmpfsMount() {
    if (::umount2(dir_.c_str(), 0) != 0) ::umount2(dir_.c_str(), MNT_DETACH);
  }
  TmpfsMount(const TmpfsMount&) = delete;
  TmpfsMount& operator=(const TmpfsMount&) = delete;

 private:
  std::filesystem::path dir_;
};

}  // namespace

TEST_CASE("ENOSPC on a full tmpfs is an error from write_at and open - synced data survives",
          "[storage][enospc]") {
  if (::geteuid() != 0) SPINDLE_SKIP("root is needed to mount a tmpfs (for a full filesystem)");
  TempDir tmp;
  TmpfsMount tmpfs(tmp.path(), "512k");
  const auto dir = tmp.path() / "store";
  std::size_t synced_b = 0;  // bytes of blob "b" synced before the filesystem filled

  spindle::test::run(
      [&] {
        auto st = Storage::open_directory(dir).value();
        auto a = st.open("p", "a").value().blob;
        for (std::size_t at = 0; at < kSyncedA; at += kChunk)
          REQUIRE(a.write_at(at, pattern(at, kChunk, 'a')));
        REQUIRE(a.sync());

        auto b = st.open("p", "b").value().blob;
        std::error_code failed;
        for (std::size_t i = 0; i < kMaxChunks && !failed; ++i) {
          const std::size_t at = i * kChunk;
          if (auto w = b.write_at(at, pattern(at, kChunk, 'b')); !w) {
            failed = w.error();
          } else if (auto s = b.sync(); !s) {
            failed = s.error();
          } else {
            synced_b = at + kChunk;
          }
        }
        INFO("error: " << failed.message());
        REQUIRE(failed);
        CHECK(failed == std::errc::no_space_on_device);
        CHECK(synced_b > 0);
        CHECK(synced_b < 512 * 1024);

        // Full: the synced bytes still read back, and a new blob cannot be
        // created (its header does not fit), with the same clean error.
        CHECK(str(a.read(0, kSyncedA).value()) == pattern(0, kSyncedA, 'a'));
        CHECK(str(b.read(0, synced_b).value()) == pattern(0, synced_b, 'b'));
        auto c = st.open("p", "c");
        REQUIRE_FALSE(c);
        CHECK(c.error() == std::errc::no_space_on_device);
      },
      spindle::Config{.workers = 2});

  // A new runtime and Storage: every synced byte is there.
  spindle::test::run(
      [&] {
        auto st = Storage::open_directory(dir).value();
        auto a = st.open("p", "a").value();
        CHECK(a.len == kSyncedA);
        CHECK(str(a.blob.read(0, kSyncedA).value()) == pattern(0, kSyncedA, 'a'));
        {
          auto b = st.open("p", "b").value();
          CHECK(b.len >= synced_b);  // a short write may have landed past the last sync
          CHECK(str(b.blob.read(0, synced_b).value()) == pattern(0, synced_b, 'b'));
        }
        // Freeing space makes the storage usable again: the blob whose
        // creation failed is re-created, written and synced.
        REQUIRE(st.remove("p", "b"));
        auto c = st.open("p", "c").value();
        CHECK(c.len == 0);
        REQUIRE(c.blob.write_at(0, "after the disk was full"));
        REQUIRE(c.blob.sync());
        CHECK(str(c.blob.read(0, 23).value()) == "after the disk was full");
        CHECK(str(a.blob.read(0, kSyncedA).value()) == pattern(0, kSyncedA, 'a'));
      },
      spindle::Config{.workers = 2});
}
