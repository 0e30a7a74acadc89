// copy, copy_file and send_file: bytes spliced through a pipe arrive
// byte-identical, on files, socket pairs and TCP loopback; a copy from a
// pipe goes through a buffer; an aborted copy leaves both positions where
// its bytes stopped; send_file's header goes in front of the file's bytes.
#include <fcntl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstring>
#include <optional>
#include <span>
#include <string>

#include "fs_test_support.hpp"

using namespace std::chrono_literals;
namespace fs = spindle::fs;
using spindle::errc;
using spindle::UniqueFd;

namespace {

std::pair<UniqueFd, UniqueFd> socket_pair() {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  return {UniqueFd(sv[0]), UniqueFd(sv[1])};
}

// Two ends of a TCP loopback connection: {accepted, connecting}.
std::pair<spindle::net::TcpStream, spindle::net::TcpStream> tcp_pair() {
  auto listener =
      spindle::net::TcpListener::bind(spindle::net::SocketAddress::loopback_v4()).value();
  auto accepting = spindle::spawn([&] { return listener.accept(); });
  auto client = spindle::net::TcpStream::connect(listener.local_addr().value()).value();
  return {accepting.join().value().value(), std::move(client)};
}

// A fiber that reads `fd` until end of stream (or `limit` bytes).
spindle::JoinHandle<std::string> drain(int fd, std::size_t limit = SIZE_MAX) {
  return spindle::spawn([fd, limit] {
    std::string got;
    std::array<std::byte, 65536> buf{};
    while (got.size() < limit) {
      auto n = spindle::io::recv(fd, buf, 0);
      if (!n || *n == 0) break;
      got.append(reinterpret_cast<const char*>(buf.data()), *n);
    }
    return got;
  });
}

// Whether bytes [0, n) of the files `a` and `b` are the same, read with
// plain system calls a MiB at a time (blocking the worker briefly).
bool same_prefix(const std::filesystem::path& a, const std::filesystem::path& b, std::size_t n) {
  const UniqueFd fa(::open(a.c_str(), O_RDONLY | O_CLOEXEC));
  const UniqueFd fb(::open(b.c_str(), O_RDONLY | O_CLOEXEC));
  REQUIRE((fa && fb));
  std::string ba(1 << 20, '\0'), bb(1 << 20, '\0');
  for (std::size_t at = 0; at < n;) {
    const std::size_t want = std::min(ba.size(), n - at);
    const ssize_t ra = ::pread(fa.get(), ba.data(), want, static_cast<off_t>(at));
    const ssize_t rb = ::pread(fb.get(), bb.data(), want, static_cast<off_t>(at));
    REQUIRE(ra > 0);
    if (rb != ra || std::memcmp(ba.data(), bb.data(), static_cast<std::size_t>(ra)) != 0) {
      return false;
    }
    at += static_cast<std::size_t>(ra);
  }
  return true;
}

}  // namespace

TEST_CASE("fs: copy_file copies a multi-MiB file byte-identical with its permissions",
          "[fs][copy]") {
  spindle::test::TempDir dir;
  spindle::test::on_workers([&] {
    const auto from = dir.fresh(), to = dir.fresh();
    const std::string data = spindle::test::pattern((5 << 20) + 12345, 3);
    REQUIRE(fs::write_file(from, data, 0640).has_value());
    REQUIRE(fs::write_file(to, "old and longer than nothing").has_value());
    CHECK(fs::copy_file(from, to).value() == data.size());
    CHECK(spindle::test::read_file(to) == data);
    CHECK(fs::stat(to).value().size == data.size());

    auto self = fs::copy_file(from, from);
    REQUIRE_FALSE(self);
    CHECK(self.error() == std::errc::invalid_argument);
    CHECK(self.error().path2 == from);
    CHECK(fs::stat(from).value().size == data.size());  // not truncated

    auto missing = fs::copy_file(dir.path() / "missing", to);
    REQUIRE_FALSE(missing);
    CHECK(missing.error() == std::errc::no_such_file_or_directory);
    CHECK(missing.error().path == dir.path() / "missing");
  });
}

TEST_CASE("fs: copy moves a range between File positions, also into append mode", "[fs][copy]") {
  spindle::test::TempDir dir;
  spindle::test::on_workers([&] {
    const auto from_path = dir.fresh(), to_path = dir.fresh();
    const std::string data = spindle::test::pattern(300'000, 4);
    REQUIRE(fs::write_file(from_path, data).has_value());
    auto from = fs::File::open(from_path).value();
    REQUIRE(from.seek(1000).has_value());
    auto to = fs::File::create(to_path).value();
    REQUIRE(to.write_all("head:").has_value());
    CHECK(fs::copy(from, to, 100'000).value() == 100'000);
    CHECK(from.seek(0, SEEK_CUR).value() == 101'000);
    CHECK(to.seek(0, SEEK_CUR).value() == 100'005);
    CHECK(fs::copy(from, to).value() == data.size() - 101'000);  // to the end
    CHECK(fs::copy(from, to).value() == 0);
    CHECK(spindle::test::read_file(to_path) == "head:" + data.substr(1000));

    auto log = fs::File::open(to_path, fs::Open::kAppend).value();
    REQUIRE(from.seek(0).has_value());
    CHECK(fs::copy(from, log, 10).value() == 10);
    CHECK(spindle::test::read_file(to_path) == "head:" + data.substr(1000) + data.substr(0, 10));
  });
}

TEST_CASE("fs: copy of many pipefuls between File positions is byte-identical", "[fs][copy]") {
  spindle::test::TempDir dir;
  spindle::test::on_workers([&] {
    const auto from_path = dir.fresh(), to_path = dir.fresh();
    const std::string data = spindle::test::pattern((5 << 20) + 4321, 7);
    REQUIRE(fs::write_file(from_path, data).has_value());
    auto from = fs::File::open(from_path).value();
    REQUIRE(from.seek(777).has_value());
    auto to = fs::File::create(to_path).value();
    REQUIRE(to.write_all("head:").has_value());
    // A length that ends inside a pipeful, then the rest to the end.
    const std::uint64_t first = (3 << 20) + 5;
    CHECK(fs::copy(from, to, first).value() == first);
    CHECK(from.seek(0, SEEK_CUR).value() == 777 + first);
    CHECK(to.seek(0, SEEK_CUR).value() == 5 + first);
    const std::uint64_t rest = data.size() - 777 - first;
    CHECK(fs::copy(from, to, fs::kToEnd).value() == rest);
    CHECK(from.seek(0, SEEK_CUR).value() == data.size());
    CHECK(to.seek(0, SEEK_CUR).value() == 5 + data.size() - 777);
    CHECK(spindle::test::read_file(to_path) == "head:" + data.substr(777));
  });
}

TEST_CASE("fs: an abort stops a large copy between pipefuls, and a second copy finishes it",
          "[fs][copy][abort]") {
  spindle::test::TempDir dir;
  spindle::test::on_workers(
      [&] {
        const auto from_path = dir.fresh(), to_path = dir.fresh();
        // Sparse but for patterned pieces at the start, the middle and the
        // end, so that a piece out of place shows.
        const std::uint64_t size = std::uint64_t{256} << 20;
        {
          auto src = fs::File::create(from_path).value();
          REQUIRE(src.truncate(size).has_value());
          REQUIRE(src.pwrite_all(spindle::test::pattern((1 << 20) + 17, 8), 0).has_value());
          REQUIRE(src.pwrite_all(spindle::test::pattern(70'001, 9), size / 2 - 3).has_value());
          REQUIRE(src.pwrite_all(spindle::test::pattern(4097, 10), size - 4097).has_value());
        }
        auto from = fs::File::open(from_path).value();
        auto to = fs::File::create(to_path).value();
        // The copy's own result: an aborted fiber's join reports the abort.
        std::optional<fs::Result<std::uint64_t>> r;
        auto copying = spindle::spawn([&] { r = fs::copy(from, to); });
        // Under way: the first pipeful has arrived.
        REQUIRE(spindle::test::eventually([&] { return fs::stat(to_path).value().size > 0; }));
        copying.abort();
        (void)copying.join();
        REQUIRE(r.has_value());
        REQUIRE_FALSE(*r);
        CHECK(r->error() == errc::aborted);
        CHECK(r->error().path == from_path);
        CHECK(r->error().path2 == to_path);
        // Both positions advanced by exactly what the destination holds.
        const std::uint64_t copied = fs::stat(to_path).value().size;
        CHECK(copied < size);
        CHECK(from.seek(0, SEEK_CUR).value() == copied);
        CHECK(to.seek(0, SEEK_CUR).value() == copied);
        CHECK(same_prefix(from_path, to_path, copied));
        // The Files go on: the rest follows.
        CHECK(fs::copy(from, to).value() == size - copied);
        CHECK(fs::stat(to_path).value().size == size);
        CHECK(same_prefix(from_path, to_path, size));
      },
      {1, 2});
}

TEST_CASE("fs: copy from a pipe File goes through a buffer, and an abort ends its wait",
          "[fs][copy][abort]") {
  spindle::test::TempDir dir;
  spindle::test::on_workers([&] {
    const auto to_path = dir.fresh();
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    fs::File reader{UniqueFd(fds[0]), "<pipe>"};
    fs::File writer{UniqueFd(fds[1])};
    auto to = fs::File::create(to_path).value();
    REQUIRE(writer.write_all("from a pipe").has_value());
    CHECK(fs::copy(reader, to, 4).value() == 4);
    // Nothing more is written: the copy waits on the pipe until the abort.
    std::optional<fs::Result<std::uint64_t>> r;
    auto copying = spindle::spawn([&] { r = fs::copy(reader, to); });
    REQUIRE(spindle::test::eventually([&] { return fs::stat(to_path).value().size == 11; }));
    (void)spindle::this_fiber::sleep_for(spindle::test::kSettle);
    copying.abort();
    (void)copying.join();
    REQUIRE(r.has_value());
    REQUIRE_FALSE(*r);
    CHECK(r->error() == errc::aborted);
    CHECK(r->error().path == "<pipe>");
    CHECK(r->error().path2 == to_path);
    CHECK(spindle::test::read_file(to_path) == "from a pipe");
  });
}

TEST_CASE("fs: send_file to a socket pair arrives byte-identical, with a pipe kept or not",
          "[fs][copy]") {
  spindle::test::TempDir dir;
  spindle::test::on_workers([&] {
    const auto path = dir.fresh();
    const std::string data = spindle::test::pattern((3 << 20) + 7, 5);
    REQUIRE(fs::write_file(path, data).has_value());
    auto file = fs::File::open(path).value();
    {
      auto [a, b] = socket_pair();
      auto reader = drain(b.get());
      CHECK(fs::send_file(file, 0, fs::kToEnd, a.get()).value() == data.size());
      a.reset();
      CHECK(reader.join().value() == data);
    }
    // Ranges through one kept pipe: the pieces in order.
    fs::SplicePipe pipe = fs::SplicePipe::make().value();
    CHECK(pipe.capacity() >= 4096);
    auto [a, b] = socket_pair();
    auto reader = drain(b.get());
    const fs::SendFileOptions kept{.pipe = &pipe};
    CHECK(fs::send_file(file, 0, 10, a.get(), kept).value() == 10);
    CHECK(fs::send_file(file, 10, 200'000, a.get(), kept).value() == 200'000);
    CHECK(fs::send_file(file, 200'010, 1 << 30, a.get(), kept).value() == data.size() - 200'010);
    CHECK(fs::send_file(file, data.size(), 100, a.get(), kept).value() == 0);
    a.reset();
    CHECK(reader.join().value() == data);
    CHECK(file.seek(0, SEEK_CUR).value() == 0);  // the position stays
  });
}

TEST_CASE("fs: send_file over TCP loopback arrives byte-identical", "[fs][copy]") {
  spindle::test::TempDir dir;
  spindle::test::on_workers([&] {
    const auto path = dir.fresh();
    const std::string data = spindle::test::pattern((2 << 20) + 3, 6);
    REQUIRE(fs::write_file(path, data).has_value());
    auto [server, client] = tcp_pair();
    auto reader = spindle::spawn([&] {
      std::string got(data.size(), '\0');
      auto r = client.read_exact(std::span(got));
      return r ? got : r.error().message();
    });
    REQUIRE(server.write_all("HTTP/1.1 200 OK\r\n\r\n").has_value());
    auto file = fs::File::open(path).value();
    CHECK(fs::send_file(file, 19, fs::kToEnd, server.native_handle()).value() == data.size() - 19);
    std::string expected = "HTTP/1.1 200 OK\r\n\r\n" + data.substr(19);
    CHECK(reader.join().value() == expected);
  });
}

TEST_CASE("fs: send_file's header goes first, and nothing stays held back when the file ends early",
          "[fs][copy]") {
  spindle::test::TempDir dir;
  spindle::test::on_workers([&] {
    const auto path = dir.fresh();
    const std::string data = spindle::test::pattern((100 << 10) + 1, 8);
    REQUIRE(fs::write_file(path, data).has_value());
    auto file = fs::File::open(path).value();
    auto [server, client] = tcp_pair();
    const int fd = server.native_handle();
    const std::string header = "HTTP/1.1 200 OK\r\n\r\n";
    const fs::SendFileOptions with_header{.header = std::as_bytes(std::span(header))};
    // `send` (a send_file call, which must return `sent`) while a fiber
    // reads: what it sent must leave the socket at once, and arrive whole.
    // Bytes MSG_MORE held back would stay unsent until TCP's probe timer
    // (200 ms at the least) sent them.
    const auto check_send = [&](auto send, std::uint64_t sent, const std::string& expected) {
      auto reader = spindle::spawn([&] {
        std::string got(expected.size(), '\0');
        auto r = client.read_exact(std::span(got), 5s);
        return r ? got : r.error().message();
      });
      CHECK(send().value() == sent);
      const auto until = std::chrono::steady_clock::now() + 100ms;
      int unsent = 0;
      while (::ioctl(fd, SIOCOUTQNSD, &unsent) == 0 && unsent > 0 &&
             std::chrono::steady_clock::now() < until) {
        (void)spindle::this_fiber::sleep_for(1ms);
      }
      CHECK(unsent == 0);
      CHECK(reader.join().value() == expected);
    };
    const auto nodelay = [&] {
      int on = -1;
      socklen_t len = sizeof on;
      REQUIRE(::getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, &len) == 0);
      return on != 0;
    };
    for (const bool delay : {false, true}) {
      INFO("Nagle's algorithm " << (delay ? "on" : "off"));
      REQUIRE(server.set_nodelay(!delay).has_value());
      // The whole file, after the header.
      check_send([&] { return fs::send_file(file, 0, fs::kToEnd, fd, with_header); }, data.size(),
                 header + data);
      // More asked for than the file holds, across two pipefuls: the last
      // splice said more, and the file ended.
      check_send([&] { return fs::send_file(file, 10, 1 << 20, fd, with_header); },
                 data.size() - 10, header + data.substr(10));
      // Nothing of the file at all: only the header.
      check_send([&] { return fs::send_file(file, data.size(), 100, fd, with_header); }, 0, header);
      // Zero bytes asked for: the header alone, sent as it is.
      check_send([&] { return fs::send_file(file, 0, 0, fd, with_header); }, 0, header);
      CHECK(nodelay() == !delay);  // the option stays as it was
    }
  });
}

TEST_CASE("fs: send_file to a peer gone is EPIPE or ECONNRESET, and the process lives",
          "[fs][copy]") {
  spindle::test::TempDir dir;
  spindle::test::on_workers([&] {
    const auto path = dir.fresh();
    REQUIRE(fs::write_file(path, spindle::test::pattern(1 << 20)).has_value());
    auto file = fs::File::open(path).value();
    auto [a, b] = socket_pair();
    b.reset();
    auto r = fs::send_file(file, 0, fs::kToEnd, a.get());
    REQUIRE_FALSE(r);
    CHECK((r.error() == std::errc::broken_pipe || r.error() == std::errc::connection_reset));
    CHECK(r.error().path == path);
    CHECK(r.error().op == std::string_view("send_file"));
  });
}

TEST_CASE("fs: send_file to a peer that never reads ends at its deadline", "[fs][copy]") {
  spindle::test::TempDir dir;
  spindle::test::on_workers([&] {
    const auto path = dir.fresh();
    REQUIRE(fs::write_file(path, spindle::test::pattern(8 << 20)).has_value());
    auto file = fs::File::open(path).value();
    auto [a, b] = socket_pair();
    fs::SplicePipe pipe;
    auto r = fs::send_file(file, 0, fs::kToEnd, a.get(), {.timeout = 50ms, .pipe = &pipe});
    REQUIRE_FALSE(r);
    CHECK(r.error() == spindle::errc::timed_out);
    // The pipe, left holding bytes, is made anew: the next call is whole.
    auto [c, d] = socket_pair();
    auto reader = drain(d.get());
    CHECK(fs::send_file(file, 0, 5000, c.get(), {.pipe = &pipe}).value() == 5000);
    c.reset();
    CHECK(reader.join().value() == spindle::test::pattern(8 << 20).substr(0, 5000));
  });
}
