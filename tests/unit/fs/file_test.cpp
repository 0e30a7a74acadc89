// fs::File: transfers at the position and at offsets, vectored forms,
// append mode, sizes, stat, flags, errors naming the path, abort, and
// opening beneath a directory.
#include <fcntl.h>
#include <linux/falloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "fs_test_support.hpp"
#include "skip.hpp"

using namespace std::chrono_literals;
using spindle::errc;
using spindle::UniqueFd;
namespace fs = spindle::fs;
using spindle::test::bytes;
using spindle::test::writable;

TEST_CASE("fs: a File writes, reads back, and moves its position", "[fs][file]") {
  spindle::test::TempDir dir;
  spindle::test::on_workers([&] {
    const auto path = dir.fresh();
    auto f = fs::File::open(path, fs::Open::kReadWrite | fs::Open::kCreate | fs::Open::kExclusive)
                 .value();
    CHECK(f.is_open());
    CHECK(f.path() == path);
    REQUIRE(f.write_all("hello, ").has_value());
    CHECK(f.write(bytes("file")).value() == 4);
    CHECK(f.seek(0).value() == 0);
    std::string got(11, '\0');
    REQUIRE(f.read_exact(writable(got)).has_value());
    CHECK(got == "hello, file");
    std::array<std::byte, 8> more{};
    CHECK(f.read(more).value() == 0);  // at the end

    // At an offset the position stays where it is.
    CHECK(f.pwrite(bytes("F"), 7).value() == 1);
    REQUIRE(f.pwrite_all("!", 11).has_value());
    std::string mid(4, '\0');
    REQUIRE(f.pread_exact(writable(mid), 7).has_value());
    CHECK(mid == "File");
    CHECK(f.seek(0, SEEK_CUR).value() == 11);
    CHECK(f.stat().value().size == 12);
    CHECK(spindle::test::read_file(path) == "hello, File!");
  });
}

TEST_CASE("fs: vectored reads and writes fill and take several buffers", "[fs][file]") {
  spindle::test::TempDir dir;
  spindle::test::on_workers([&] {
    auto f = fs::File::open(dir.fresh(), fs::Open::kReadWrite | fs::Open::kCreate).value();
    std::string a = "vectored ", b = "writes";
    const iovec out[2] = {{a.data(), a.size()}, {b.data(), b.size()}};
    CHECK(f.writev(out).value() == 15);
    CHECK(f.pwritev(out, 15).value() == 15);
    std::string head(9, '\0'), tail(21, '\0');
    const iovec in[2] = {{head.data(), head.size()}, {tail.data(), tail.size()}};
    CHECK(f.preadv(in, 0).value() == 30);
    CHECK(head == "vectored ");
    CHECK(tail == "writesvectored writes");
    REQUIRE(f.seek(9).has_value());
    std::string w(6, '\0'), rest(32, '\0');
    const iovec at[2] = {{w.data(), w.size()}, {rest.data(), rest.size()}};
    CHECK(f.readv(at).value() == 21);
    CHECK(w == "writes");
    CHECK(rest.substr(0, 15) == "vectored writes");
  });
}

TEST_CASE("fs: append mode writes at the end wherever the position is", "[fs][file]") {
  spindle::test::TempDir dir;
  spindle::test::on_workers([&] {
    const auto path = dir.fresh();
    {
      auto log = fs::File::open(path, fs::Open::kAppend | fs::Open::kCreate).value();
      REQUIRE(log.write_all("one\n").has_value());
    }
    auto log = fs::File::open(path, fs::Open::kAppend | fs::Open::kRead).value();
    REQUIRE(log.seek(0).has_value());
    REQUIRE(log.write_all("two\n").has_value());
    CHECK(spindle::test::read_file(path) == "one\ntwo\n");
    std::string got(8, '\0');
    REQUIRE(log.pread_exact(writable(got), 0).has_value());
    CHECK(got == "one\ntwo\n");
  });
}

TEST_CASE("fs: truncate and fallocate set the size stat reports", "[fs][file]") {
  spindle::test::TempDir dir;
  spindle::test::on_workers([&] {
    auto f = fs::File::open(dir.fresh(), fs::Open::kReadWrite | fs::Open::kCreate).value();
    REQUIRE(f.write_all(spindle::test::pattern(10000)).has_value());
    REQUIRE(f.truncate(100).has_value());
    CHECK(f.stat().value().size == 100);
    REQUIRE(f.truncate(5000).has_value());  // extended with zeros
    CHECK(f.stat().value().size == 5000);

    auto grown = f.fallocate(0, 0, 1 << 20);
    if (!grown && grown.error() == std::errc::operation_not_supported) {
      SPINDLE_SKIP("the file system of $TMPDIR has no fallocate");
    }
    REQUIRE(grown.has_value());
    const auto st = f.stat().value();
    CHECK(st.size == 1 << 20);
    CHECK(st.blocks * 512 >= 1 << 20);
    REQUIRE(f.fallocate(FALLOC_FL_KEEP_SIZE, 1 << 20, 1 << 20).has_value());
    CHECK(f.stat().value().size == 1 << 20);
    REQUIRE(f.fsync().has_value());
    REQUIRE(f.fdatasync().has_value());
    std::string tail(8, 'x');
    REQUIRE(f.pread_exact(writable(tail), (1 << 20) - 8).has_value());
    CHECK(tail == std::string(8, '\0'));
  });
}

TEST_CASE("fs: stat reports the type, the mode and the modification time", "[fs][file]") {
  spindle::test::TempDir dir;
  spindle::test::on_workers([&] {
    const auto before = std::chrono::system_clock::now() - 2s;
    auto f = fs::File::open(dir.fresh(), fs::Open::kWrite | fs::Open::kCreate, 0640).value();
    REQUIRE(f.write_all("abc").has_value());
    const auto st = f.stat().value();
    CHECK(st.is_regular());
    CHECK(st.type == fs::FileType::kRegular);
    CHECK(S_ISREG(st.mode));
    CHECK((st.permissions() & ~0640u) == 0);  // the umask may take bits away
    CHECK(st.size == 3);
    CHECK(st.links == 1);
    CHECK(st.modified > before);
    CHECK(st.modified < std::chrono::system_clock::now() + 2s);
    CHECK(std::string(fs::file_type_name(st.type)) == "regular");
  });
}

TEST_CASE("fs: stat_cached reports what stat does, on a worker or any thread", "[fs][file]") {
  spindle::test::TempDir dir;
  const auto path = dir.fresh();
  spindle::test::on_workers([&] {
    auto f = fs::File::open(path, fs::Open::kReadWrite | fs::Open::kCreate, 0600).value();
    REQUIRE(f.write_all(spindle::test::pattern(4321)).has_value());
    const auto cached = f.stat_cached().value();
    const auto synced = f.stat().value();
    CHECK(cached.size == 4321);
    CHECK(cached.is_regular());
    CHECK(cached.inode == synced.inode);
    CHECK(cached.device == synced.device);
    CHECK(cached.mode == synced.mode);
    CHECK(cached.modified == synced.modified);
    REQUIRE(f.truncate(17).has_value());
    CHECK(f.stat_cached().value().size == 17);  // the kernel's attributes, not a copy of them
  });
  // No runtime: a plain system call on this thread.
  const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  REQUIRE(fd);
  const fs::File plain(UniqueFd(::dup(fd.get())), path);
  CHECK(plain.stat_cached().value().size == 17);
  const fs::File closed;
  auto none = closed.stat_cached();
  REQUIRE_FALSE(none);
  CHECK(none.error() == std::errc::bad_file_descriptor);
  CHECK(none.error().path.empty());
}

TEST_CASE("fs: open with exclusive creation, raw flags and read-only access", "[fs][file]") {
  spindle::test::TempDir dir;
  spindle::test::on_workers([&] {
    const auto path = dir.fresh();
    REQUIRE(fs::File::open(path, O_WRONLY | O_CREAT | O_EXCL, 0600).has_value());
    auto again = fs::File::open(path, fs::Open::kWrite | fs::Open::kCreate | fs::Open::kExclusive);
    REQUIRE_FALSE(again);
    CHECK(again.error() == std::errc::file_exists);
    CHECK(fs::open_flags(fs::Open::kRead) == O_RDONLY);
    CHECK(fs::open_flags(fs::Open::kReadWrite | fs::Open::kTruncate) == (O_RDWR | O_TRUNC));
    CHECK(fs::open_flags(fs::Open::kAppend) == (O_WRONLY | O_APPEND));

    auto ro = fs::File::open(path).value();
    auto denied = ro.write_all("no");
    REQUIRE_FALSE(denied);
    CHECK(denied.error() == std::errc::bad_file_descriptor);
    CHECK(denied.error().op == std::string_view("write"));
    CHECK(denied.error().path == path);
    REQUIRE(ro.close().has_value());
    CHECK_FALSE(ro.is_open());
    CHECK(ro.close().error() == std::errc::bad_file_descriptor);
  });
}

TEST_CASE("fs: an error names the path: open of a missing file is ENOENT", "[fs][file]") {
  spindle::test::TempDir dir;
  spindle::test::on_workers([&] {
    const auto path = dir.path() / "no such file.toml";
    auto r = fs::File::open(path);
    REQUIRE_FALSE(r);
    CHECK(r.error() == std::errc::no_such_file_or_directory);
    CHECK(r.error().code == std::errc::no_such_file_or_directory);
    CHECK(r.error().path == path);
    const std::string message = r.error().message();
    CHECK(message.find(path.string()) != std::string::npos);
    CHECK(message.find("open") == 0);
    CHECK(message.find("No such file or directory") != std::string::npos);
    try {
      (void)r.value();
      FAIL("value() of an error must throw");
    } catch (const std::filesystem::filesystem_error& e) {
      CHECK(e.code() == std::errc::no_such_file_or_directory);
      CHECK(e.path1() == path);
      CHECK(std::string(e.what()).find(path.string()) != std::string::npos);
    }
  });
}

TEST_CASE("fs: read_exact short of the bytes asked for is unexpected_eof", "[fs][file]") {
  spindle::test::TempDir dir;
  spindle::test::on_workers([&] {
    auto f = fs::File::open(dir.fresh(), fs::Open::kReadWrite | fs::Open::kCreate).value();
    REQUIRE(f.write_all("short").has_value());
    std::string buf(10, '\0');
    auto r = f.pread_exact(writable(buf), 0);
    REQUIRE_FALSE(r);
    CHECK(r.error() == errc::unexpected_eof);
    CHECK(buf.substr(0, 5) == "short");
  });
}

TEST_CASE("fs: abort of a fiber blocked in a read from a pipe File returns aborted",
          "[fs][file][abort]") {
  spindle::test::on_workers([] {
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    fs::File reader{spindle::UniqueFd(fds[0]), "<pipe>"};
    fs::File writer{spindle::UniqueFd(fds[1])};
    std::array<std::byte, 8> buf{};
    auto h = spindle::spawn([&] { return reader.read(buf); });
    (void)spindle::this_fiber::sleep_for(5ms);
    h.abort();
    auto r = h.join();
    REQUIRE_FALSE(r);
    CHECK(r.error() == errc::aborted);
    // The read was withdrawn: what is written now is read next, not lost.
    REQUIRE(writer.write_all("after").has_value());
    std::string got(5, '\0');
    REQUIRE(reader.read_exact(writable(got)).has_value());
    CHECK(got == "after");

    // A deadline scope ends the read the same way.
    auto timed = spindle::this_fiber::with_timeout(10ms, [&] { return reader.read(buf); });
    REQUIRE_FALSE(timed);
    CHECK(timed.error() == errc::timed_out);
    CHECK(timed.error().path == "<pipe>");
  });
}

TEST_CASE("fs: open_beneath follows symlinks that stay in the directory and refuses a way out",
          "[fs][file][beneath]") {
  // root/{a.txt, sub/b.txt} and symlinks in and out of it; secret.txt beside it.
  spindle::test::TempDir dir;
  const auto root = dir.path() / "root";
  std::filesystem::create_directories(root / "sub");
  std::ofstream(root / "a.txt") << "inside";
  std::ofstream(root / "sub" / "b.txt") << "below";
  std::ofstream(dir.path() / "secret.txt") << "secret";
  std::filesystem::create_symlink("a.txt", root / "same.txt");
  std::filesystem::create_symlink("../a.txt", root / "sub" / "up.txt");  // climbs, stays in
  std::filesystem::create_symlink("sub", root / "down");                 // a directory inside
  std::filesystem::create_symlink("../secret.txt", root / "rel_out.txt");
  std::filesystem::create_symlink("../../secret.txt", root / "sub" / "deep_out.txt");
  std::filesystem::create_symlink(dir.path() / "secret.txt", root / "abs_out.txt");
  std::filesystem::create_symlink(root / "a.txt", root / "abs_in.txt");
  spindle::test::on_workers([&] {
    const auto d = fs::File::open(root, O_PATH | O_DIRECTORY).value();
    const auto contents = [&](const char* path) {
      auto f = fs::File::open_beneath(d, path, O_RDONLY);
      REQUIRE(f);
      CHECK(f->path() == root / path);
      CHECK((::fcntl(f->native_handle(), F_GETFD) & FD_CLOEXEC) != 0);
      std::string got(16, '\0');
      got.resize(f->pread(writable(got), 0).value());
      return got;
    };
    CHECK(contents("a.txt") == "inside");
    CHECK(contents("sub/b.txt") == "below");
    CHECK(contents("same.txt") == "inside");
    CHECK(contents("sub/up.txt") == "inside");
    CHECK(contents("down/b.txt") == "below");
    CHECK(contents("sub/../a.txt") == "inside");  // ".." that stays in is a plain lookup

    for (const char* out : {"../secret.txt", "sub/../../secret.txt", "rel_out.txt",
                            "sub/deep_out.txt", "abs_out.txt", "abs_in.txt"}) {
      INFO(out);
      auto r = fs::File::open_beneath(d, out, O_RDONLY);
      REQUIRE_FALSE(r);
      CHECK(r.error() == std::errc::cross_device_link);  // EXDEV
      CHECK(r.error().op == std::string_view("open"));
      CHECK(r.error().path == root / out);
    }
    const auto absolute = dir.path() / "secret.txt";
    CHECK(fs::File::open_beneath(d, absolute, O_RDONLY).error() == std::errc::cross_device_link);
    CHECK(fs::File::open_beneath(d, "missing", O_RDONLY).error() ==
          std::errc::no_such_file_or_directory);

    // Created beneath, with its mode; no mode reaches openat2 without O_CREAT.
    auto made = fs::File::open_beneath(d, "sub/new.txt", O_WRONLY | O_CREAT | O_EXCL, 0600);
    REQUIRE(made);
    CHECK(made->stat().value().permissions() == 0600);
    REQUIRE(fs::remove_file(root / "sub" / "new.txt").has_value());

    // A procfs magic link is refused even beneath its own directory.
    const auto proc_fds = fs::File::open("/proc/self/fd", O_PATH | O_DIRECTORY).value();
    auto magic = fs::File::open_beneath(proc_fds, std::to_string(d.native_handle()), O_RDONLY);
    REQUIRE_FALSE(magic);
    CHECK(magic.error() == std::errc::too_many_symbolic_link_levels);  // ELOOP
  });
}
