// copy, copy_file and send_file: bytes spliced through a pipe arrive
// byte-identical, on files, socket pairs and TCP loopback.
#include <sys/socket.h>
#include <sys/stat.h>

#include <array>
#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "fs_test_support.hpp"

using namespace std::chrono_literals;
namespace fs = spindle::fs;
using spindle::UniqueFd;

namespace {

std::pair<UniqueFd, UniqueFd> socket_pair() {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
  return {UniqueFd(sv[0]), UniqueFd(sv[1])};
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
    auto listener =
        spindle::net::TcpListener::bind(spindle::net::SocketAddress::loopback_v4()).value();
    auto accepting = spindle::spawn([&] { return listener.accept(); });
    auto client = spindle::net::TcpStream::connect(listener.local_addr().value()).value();
    auto server = accepting.join().value().value();
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
