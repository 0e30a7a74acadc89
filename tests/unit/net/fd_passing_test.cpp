#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <string>
#include <vector>

#include "net_test_support.hpp"

using namespace std::chrono_literals;
using spindle::errc;
using spindle::UniqueFd;
namespace net = spindle::net;
namespace io = spindle::io;

namespace {

std::span<const std::byte> bytes(std::string_view s) { return std::as_bytes(std::span(s)); }

std::pair<UniqueFd, UniqueFd> make_pipe() {
  int p[2];
  REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
  return {UniqueFd(p[0]), UniqueFd(p[1])};
}

// Everything `fd` yields until end of file, read through the backend.
std::string read_to_end(int fd) {
  std::string out;
  std::array<std::byte, 256> buf;
  for (;;) {
    const std::size_t n = io::read(fd, buf, io::kStreamOffset).value();
    if (n == 0) return out;
    out += spindle::test::text(std::span(buf).first(n));
  }
}

}  // namespace

TEST_CASE("a pipe's write end passed over a Unix stream carries the receiver's writes",
          "[net][unix][fds]") {
  spindle::test::on_workers([] {
    auto [sender, receiver] = net::UnixStream::pair().value();
    auto [pipe_r, pipe_w] = make_pipe();
    const std::string msg = "written through the passed descriptor";
    auto peer = spindle::spawn([&receiver, &msg] {
      std::array<std::byte, 16> buf;
      auto got = receiver.recv_fds(buf, 4, 5s);
      REQUIRE(got.has_value());
      CHECK(spindle::test::text(std::span(buf).first(got->size)) == "pipe");
      REQUIRE(got->fds.size() == 1);
      const int fd = got->fds[0].get();
      CHECK((::fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
      const iovec v{const_cast<char*>(msg.data()), msg.size()};
      CHECK(io::write(fd, std::span(&v, 1), io::kStreamOffset).value() == msg.size());
      // The received descriptor closes here: the pipe's last writer.
    });
    const std::array fds{pipe_w.get()};
    REQUIRE(sender.send_fds(bytes("pipe"), fds).has_value());
    pipe_w.reset();  // the receiver's copy stays open
    REQUIRE(peer.join());
    CHECK(read_to_end(pipe_r.get()) == msg);
  });
}

TEST_CASE("descriptors over a Unix datagram pair, and bytes before them in a stream's buffer",
          "[net][unix][fds]") {
  spindle::test::on_workers([] {
    auto [a, b] = net::UnixDatagram::pair().value();
    auto [pipe_r, pipe_w] = make_pipe();
    const std::array fds{pipe_r.get(), pipe_w.get()};
    REQUIRE(a.send_fds({}, fds).value() == 0);  // a datagram may carry descriptors alone
    std::array<std::byte, 8> buf;
    auto got = b.recv_fds(buf, net::kMaxPassedFds, 5s);
    REQUIRE(got.has_value());
    CHECK(got->size == 0);
    REQUIRE(got->fds.size() == 2);
    REQUIRE(::write(got->fds[1].get(), "x", 1) == 1);  // the passed write end
    char c = 0;
    REQUIRE(::read(got->fds[0].get(), &c, 1) == 1);  // the passed read end
    CHECK(c == 'x');

    // A stream returns bytes already in its read buffer first, without
    // descriptors, then receives the next message with them.
    auto [s, t] = net::UnixStream::pair().value();
    REQUIRE(s.write_all("head").has_value());
    REQUIRE(t.fill(5s).value() == 4);
    const std::array one{pipe_w.get()};
    REQUIRE(s.send_fds(bytes("body"), one).has_value());
    auto head = t.recv_fds(buf, 1, 5s);
    REQUIRE(head.has_value());
    CHECK(spindle::test::text(std::span(buf).first(head->size)) == "head");
    CHECK(head->fds.empty());
    auto body = t.recv_fds(buf, 1, 5s);
    REQUIRE(body.has_value());
    CHECK(spindle::test::text(std::span(buf).first(body->size)) == "body");
    CHECK(body->fds.size() == 1);
  });
}

TEST_CASE("more descriptors than asked for are closed and reported", "[net][unix][fds]") {
  spindle::test::on_workers([] {
    auto [pipe_r, pipe_w] = make_pipe();
    const std::array fds{pipe_r.get(), pipe_w.get()};
    const std::size_t open_before = spindle::test::open_fd_count();
    std::array<std::byte, 8> buf;

    auto [a, b] = net::UnixStream::pair().value();
    REQUIRE(a.send_fds(bytes("two"), fds).has_value());
    CHECK(b.recv_fds(buf, 1, 5s).error() == std::errc::message_size);
    CHECK(spindle::test::open_fd_count() == open_before + 2);  // the pair, nothing more
    CHECK(b.read(buf).error() == errc::closed);  // the bytes went with the descriptors

    auto [c, d] = net::UnixDatagram::pair().value();
    REQUIRE(c.send_fds(bytes("two"), fds).has_value());
    CHECK(d.recv_fds(buf, 1, 5s).error() == std::errc::message_size);
    REQUIRE(c.send_fds(bytes("one"), std::span(fds).first(1)).has_value());
    CHECK(d.recv_from(buf, 5s).error() == std::errc::message_size);  // no room at all
    CHECK(spindle::test::open_fd_count() == open_before + 4);        // the two pairs
    // Datagrams keep their boundaries: the socket goes on.
    REQUIRE(c.send("next").has_value());
    auto next = d.recv(buf, 5s);
    REQUIRE(next.has_value());
    CHECK(spindle::test::text(std::span(buf).first(next->size)) == "next");

    CHECK_THROWS_WITH(a.send_fds({}, fds), Catch::Contains("data is empty"));
    const std::vector<int> too_many(net::kMaxPassedFds + 1, pipe_r.get());
    CHECK_THROWS_WITH(c.send_fds(bytes("x"), too_many), Catch::Contains("more than the 253"));
  });
}

TEST_CASE("a receive of descriptors times out when nothing comes", "[net][unix][fds]") {
  spindle::test::on_workers([] {
    std::array<std::byte, 8> buf;
    auto [a, b] = net::UnixStream::pair().value();
    auto [c, d] = net::UnixDatagram::pair().value();
    const auto t0 = spindle::Clock::now();
    CHECK(b.recv_fds(buf, 1, 20ms).error() == errc::timed_out);
    const auto t1 = spindle::Clock::now();
    CHECK(t1 - t0 >= 20ms);
    CHECK(d.recv_fds(buf, 1, 20ms).error() == errc::timed_out);
    CHECK(spindle::Clock::now() - t1 >= 20ms);
  });
}
