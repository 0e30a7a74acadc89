// spindle::io: every typed operation does what its system call does, and
// reports the kernel's errors, on the runtime's backend.
#include <fcntl.h>
#include <linux/stat.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstring>
#include <span>
#include <string>
#include <string_view>

#include "runtime_harness.hpp"
#include "spindle/base/unique_fd.hpp"
#include "temp_dir.hpp"

using namespace std::chrono_literals;
namespace io = spindle::io;
using spindle::UniqueFd;

namespace {

std::span<const std::byte> bytes(std::string_view s) { return std::as_bytes(std::span(s)); }

std::string text(std::span<const std::byte> b) {
  return std::string(reinterpret_cast<const char*>(b.data()), b.size());
}

// A listening loopback socket (blocking, as the io_uring backend wants it).
UniqueFd listen_loopback(sockaddr_in& addr) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  REQUIRE(fd);
  addr = sockaddr_in{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  REQUIRE(::listen(fd.get(), 16) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  return fd;
}

}  // namespace

TEST_CASE("io: accept, connect, send, sendmsg and recv move bytes over loopback", "[io]") {
  spindle::test::on_workers([] {
    sockaddr_in addr{};
    UniqueFd listener = listen_loopback(addr);
    auto server = spindle::spawn([&]() -> std::string {
      sockaddr_storage peer{};
      socklen_t len = sizeof peer;
      auto conn =
          io::accept(listener.get(), reinterpret_cast<sockaddr*>(&peer), &len, SOCK_CLOEXEC);
      REQUIRE(conn);
      UniqueFd c(*conn);
      CHECK(len == sizeof(sockaddr_in));
      std::string got;
      std::array<std::byte, 64> buf{};
      while (got.size() < 11) {
        auto n = io::recv(c.get(), buf, 0);
        REQUIRE(n);
        if (*n == 0) break;
        got += text(std::span(buf).first(*n));
      }
      return got;
    });
    UniqueFd client(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    REQUIRE(client);
    REQUIRE(io::connect(client.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr));
    CHECK(io::send(client.get(), bytes("hello"), MSG_NOSIGNAL).value() == 5);
    std::string_view parts[2] = {" wor", "ld"};
    iovec iov[2] = {{const_cast<char*>(parts[0].data()), parts[0].size()},
                    {const_cast<char*>(parts[1].data()), parts[1].size()}};
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = 2;
    CHECK(io::sendmsg(client.get(), msg, MSG_NOSIGNAL).value() == 6);
    CHECK(server.join().value() == "hello world");
  });
}

TEST_CASE("io: recv with expect_wait still receives what arrives later", "[io]") {
  spindle::test::on_workers([] {
    int sv[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    UniqueFd a(sv[0]);
    UniqueFd b(sv[1]);
    auto reader = spindle::spawn([&] {
      std::array<std::byte, 8> buf{};
      auto n = io::recv(a.get(), buf, 0, {.expect_wait = true});
      return n ? text(std::span(buf).first(*n)) : std::string("error");
    });
    (void)spindle::this_fiber::sleep_for(5ms);
    CHECK(io::send(b.get(), bytes("late"), MSG_NOSIGNAL).value() == 4);
    CHECK(reader.join().value() == "late");
  });
}

TEST_CASE("io: a connect to a closed port fails with the kernel's errno", "[io]") {
  spindle::test::run([] {
    sockaddr_in addr{};
    {
      UniqueFd l = listen_loopback(addr);  // a port that was just free, now closed
    }
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    auto r = io::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    REQUIRE_FALSE(r);
    CHECK(r.error() == std::errc::connection_refused);
  });
}

TEST_CASE("io: file operations open, write, sync, stat, truncate, rename and unlink", "[io]") {
  spindle::test::TempDir dir;
  spindle::test::on_workers([&] {
    const std::string base = dir.fresh().string();
    REQUIRE(io::mkdirat(AT_FDCWD, base.c_str(), 0755));
    auto again = io::mkdirat(AT_FDCWD, base.c_str(), 0755);
    REQUIRE_FALSE(again);
    CHECK(again.error() == std::errc::file_exists);

    auto dirfd = io::openat(AT_FDCWD, base.c_str(), O_RDONLY | O_DIRECTORY, 0);
    REQUIRE(dirfd);
    UniqueFd d(*dirfd);
    CHECK((::fcntl(d.get(), F_GETFD) & FD_CLOEXEC) != 0);  // O_CLOEXEC is always added

    auto missing = io::openat(d.get(), "missing", O_RDONLY, 0);
    REQUIRE_FALSE(missing);
    CHECK(missing.error() == std::errc::no_such_file_or_directory);

    auto created = io::openat(d.get(), "a", O_RDWR | O_CREAT | O_EXCL, 0644);
    REQUIRE(created);
    UniqueFd f(*created);
    const std::string_view head = "spindle ", tail = "io";
    const iovec iov[2] = {{const_cast<char*>(head.data()), head.size()},
                          {const_cast<char*>(tail.data()), tail.size()}};
    CHECK(io::write(f.get(), iov, 0, 0, {.cancellable = false}).value() == 10);
    REQUIRE(io::fsync(f.get(), true));
    REQUIRE(io::fsync(f.get(), false));

    struct statx st{};
    REQUIRE(io::statx(f.get(), "", AT_EMPTY_PATH, STATX_SIZE, &st));
    CHECK(st.stx_size == 10);
    std::array<std::byte, 16> buf{};
    CHECK(text(std::span(buf).first(io::read(f.get(), buf, 2).value())) == "indle io");
    CHECK(io::read(f.get(), buf, 10).value() == 0);  // end of file

    REQUIRE(io::ftruncate(f.get(), 4));
    REQUIRE(io::statx(d.get(), "a", 0, STATX_SIZE, &st));
    CHECK(st.stx_size == 4);

    REQUIRE(io::renameat(d.get(), "a", d.get(), "b", 0));
    auto b2 = io::openat(d.get(), "c", O_RDWR | O_CREAT, 0644);
    REQUIRE(b2);
    ::close(*b2);
    auto clash = io::renameat(d.get(), "b", d.get(), "c", RENAME_NOREPLACE);
    REQUIRE_FALSE(clash);
    CHECK(clash.error() == std::errc::file_exists);

    REQUIRE(io::unlinkat(d.get(), "b", 0));
    REQUIRE(io::unlinkat(d.get(), "c", 0));
    auto gone = io::unlinkat(d.get(), "b", 0);
    REQUIRE_FALSE(gone);
    CHECK(gone.error() == std::errc::no_such_file_or_directory);
    REQUIRE(io::unlinkat(AT_FDCWD, base.c_str(), AT_REMOVEDIR));
  });
}

TEST_CASE("io: poll waits for readiness and reports the events", "[io]") {
  spindle::test::on_workers([] {
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    UniqueFd r(fds[0]);
    UniqueFd w(fds[1]);
    auto waiter = spindle::spawn([&] { return io::poll(r.get(), POLLIN).value_or(0); });
    (void)spindle::this_fiber::sleep_for(5ms);
    REQUIRE(::write(w.get(), "x", 1) == 1);
    CHECK((waiter.join().value() & POLLIN) != 0);
    auto timed = io::poll(w.get(), 0, {.deadline = spindle::Clock::now() + 10ms});
    REQUIRE_FALSE(timed);
    CHECK(timed.error() == spindle::errc::timed_out);
  });
}

TEST_CASE("io: nop completes", "[io]") {
  spindle::test::on_workers([] {
    for (int i = 0; i < 100; ++i) REQUIRE(io::nop());
  });
}
