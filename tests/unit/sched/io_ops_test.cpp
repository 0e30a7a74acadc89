// spindle::io: every typed operation does what its system call does, and
// reports the kernel's errors, on the runtime's backend.
#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/openat2.h>
#include <linux/stat.h>
#include <netinet/in.h>
#include <poll.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <catch2/catch.hpp>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime_harness.hpp"
#include "skip.hpp"
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

// A connected AF_UNIX pair of `type`.
std::pair<UniqueFd, UniqueFd> unix_pair(int type = SOCK_STREAM) {
  int sv[2];
  REQUIRE(::socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv) == 0);
  return {UniqueFd(sv[0]), UniqueFd(sv[1])};
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

namespace {

// A message of the one buffer `iov`, with `control` room for ancillary data
// and `name` for the sender's address.
msghdr message(iovec& iov, std::span<char> control, sockaddr_in* name = nullptr) {
  msghdr msg{};
  msg.msg_name = name;
  msg.msg_namelen = name != nullptr ? sizeof *name : 0;
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.empty() ? nullptr : control.data();
  msg.msg_controllen = control.size();
  return msg;
}

// Sends `fd` over `sock` with SCM_RIGHTS, with the byte 'f'.
void send_fd(int sock, int fd) {
  char byte = 'f';
  iovec iov{&byte, 1};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg = message(iov, control);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  REQUIRE(::sendmsg(sock, &msg, MSG_NOSIGNAL) == 1);
}

}  // namespace

TEST_CASE("io: recvmsg waits for a datagram and reports its sender, truncation and descriptors",
          "[io]") {
  spindle::test::on_workers([] {
    auto udp = [] {
      UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
      sockaddr_in a{};
      a.sin_family = AF_INET;
      a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      REQUIRE(::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
      socklen_t len = sizeof a;
      REQUIRE(::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len) == 0);
      return std::pair(std::move(fd), a);
    };
    auto [a, a_addr] = udp();
    auto [b, b_addr] = udp();
    auto reader = spindle::spawn([&a] {
      std::array<std::byte, 4> buf{};
      sockaddr_in from{};
      iovec iov{buf.data(), buf.size()};
      msghdr msg = message(iov, {}, &from);
      const std::size_t n = io::recvmsg(a.get(), msg, 0).value();
      CHECK((msg.msg_flags & MSG_TRUNC) != 0);
      CHECK(msg.msg_namelen == sizeof from);
      return std::pair(text(std::span(buf).first(n)), from.sin_port);
    });
    (void)spindle::this_fiber::sleep_for(5ms);  // the reader waits for readiness
    REQUIRE(::sendto(b.get(), "truncated", 9, 0, reinterpret_cast<sockaddr*>(&a_addr),
                     sizeof a_addr) == 9);
    const auto [got, port] = reader.join().value();
    CHECK(got == "trun");
    CHECK(port == b_addr.sin_port);

    // A descriptor, installed close-on-exec with MSG_CMSG_CLOEXEC.
    auto [c, d] = unix_pair(SOCK_DGRAM);
    int p[2];
    REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
    UniqueFd pipe_r(p[0]);
    send_fd(d.get(), p[1]);
    ::close(p[1]);
    char byte = 0;
    iovec iov{&byte, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg = message(iov, control);
    REQUIRE(io::recvmsg(c.get(), msg, MSG_CMSG_CLOEXEC).value() == 1);
    CHECK(byte == 'f');
    CHECK((msg.msg_flags & MSG_CTRUNC) == 0);
    const cmsghdr* cm = CMSG_FIRSTHDR(&msg);
    REQUIRE(cm != nullptr);
    REQUIRE(cm->cmsg_type == SCM_RIGHTS);
    int passed = -1;
    std::memcpy(&passed, CMSG_DATA(cm), sizeof passed);
    UniqueFd pipe_w(passed);
    CHECK((::fcntl(pipe_w.get(), F_GETFD) & FD_CLOEXEC) != 0);
    REQUIRE(::write(pipe_w.get(), "z", 1) == 1);
    REQUIRE(::read(pipe_r.get(), &byte, 1) == 1);
    CHECK(byte == 'z');
  });
}

TEST_CASE("io: recv with expect_wait still receives what arrives later", "[io]") {
  spindle::test::on_workers([] {
    auto [a, b] = unix_pair();
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

// An fd with an fd id: the epoll backend keeps it registered (edge-triggered)
// and remembers its readiness between operations; these must never miss data.
namespace {

// What one recv of up to 16 bytes gets.
std::string recv_text(int fd, const spindle::IoOptions& options) {
  std::array<std::byte, 16> buf{};
  auto n = io::recv(fd, buf, 0, options);
  return n ? text(std::span(buf).first(*n)) : "error: " + n.error().message();
}

// Sends `s` on `fd` after `delay`, from another fiber.
spindle::JoinHandle<void> send_later(int fd, std::string s, std::chrono::milliseconds delay) {
  return spindle::spawn([fd, s = std::move(s), delay] {
    (void)spindle::this_fiber::sleep_for(delay);
    CHECK(io::send(fd, bytes(s), MSG_NOSIGNAL).value() == s.size());
  });
}

}  // namespace

TEST_CASE("io: an fd with an id gets data that came while no fiber waited on it", "[io]") {
  spindle::test::on_workers([] {
    auto [a, b] = unix_pair();
    const spindle::IoOptions o{.fd_id = io::new_fd_id()};
    // Another fiber's wait keeps I/O in flight, so an idle worker sleeps in
    // its backend and takes in what is reported for `a` meanwhile.
    auto [c, d] = unix_pair();
    auto keeper = spindle::spawn([&c] { return recv_text(c.get(), {}); });
    // A first wait registers the fd; a short read leaves it known drained.
    auto w = send_later(b.get(), "ab", 2ms);
    CHECK(recv_text(a.get(), o) == "ab");
    REQUIRE(w.join());
    // Data that arrives now, while nothing waits, is reported to no waiter.
    CHECK(io::send(b.get(), bytes("cd"), MSG_NOSIGNAL).value() == 2);
    (void)spindle::this_fiber::sleep_for(5ms);
    CHECK(recv_text(a.get(), o) == "cd");
    // Reported with no waiter again and again, then read in one go, then
    // waited for again.
    for (const char* part : {"1", "2", "3", "4", "5", "6"}) {
      CHECK(io::send(b.get(), bytes(part), MSG_NOSIGNAL).value() == 1);
      (void)spindle::this_fiber::sleep_for(2ms);
    }
    CHECK(recv_text(a.get(), o) == "123456");
    w = send_later(b.get(), "late", 5ms);
    CHECK(recv_text(a.get(), o) == "late");
    REQUIRE(w.join());
    // Turn-taking many times, the reader sometimes late, sometimes early.
    for (int i = 0; i < 200; ++i) {
      const std::string msg = "m" + std::to_string(i);
      w = send_later(b.get(), msg, std::chrono::milliseconds(i % 3 == 0 ? 1 : 0));
      if (i % 2 == 0) (void)spindle::this_fiber::yield();
      CHECK(recv_text(a.get(), o) == msg);
      REQUIRE(w.join());
    }
    // The last data and the end of stream in one report: both are read.
    w = spindle::spawn([&b] {
      (void)spindle::this_fiber::sleep_for(2ms);
      CHECK(io::send(b.get(), bytes("bye"), MSG_NOSIGNAL).value() == 3);
      CHECK(::shutdown(b.get(), SHUT_WR) == 0);
    });
    CHECK(recv_text(a.get(), o) == "bye");
    CHECK(recv_text(a.get(), o).empty());
    REQUIRE(w.join());
    CHECK(io::send(d.get(), bytes("end"), MSG_NOSIGNAL).value() == 3);
    CHECK(keeper.join().value() == "end");
  });
}

TEST_CASE("io: an fd with an id: a short datagram or a peek leaves the rest readable", "[io]") {
  spindle::test::on_workers([] {
    auto [a, b] = unix_pair(SOCK_DGRAM);
    const spindle::IoOptions o{.fd_id = io::new_fd_id()};
    for (int round = 0; round < 3; ++round) {
      // Two datagrams in one report, after a wait that registers the fd.
      auto w = spindle::spawn([&b] {
        (void)spindle::this_fiber::sleep_for(2ms);
        CHECK(io::send(b.get(), bytes("one"), 0).value() == 3);
        CHECK(io::send(b.get(), bytes("two"), 0).value() == 3);
      });
      std::array<std::byte, 16> buf{};
      auto peeked = io::recv(a.get(), buf, MSG_PEEK, o);
      CHECK(text(std::span(buf).first(peeked.value())) == "one");
      CHECK(recv_text(a.get(), o) == "one");
      CHECK(recv_text(a.get(), o) == "two");
      REQUIRE(w.join());
    }
  });
}

TEST_CASE("io: a Unix stream receive cut short by passed descriptors leaves the rest readable",
          "[io]") {
  spindle::test::on_workers([] {
    auto [a, b] = unix_pair();
    const spindle::IoOptions o{.fd_id = io::new_fd_id()};
    int p[2];
    REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
    UniqueFd pipe_r(p[0]), pipe_w(p[1]);
    auto w = spindle::spawn([&] {
      (void)spindle::this_fiber::sleep_for(2ms);
      send_fd(b.get(), pipe_w.get());
      REQUIRE(::send(b.get(), "rest", 4, MSG_NOSIGNAL) == 4);
    });
    // A receive ends after the bytes that carried descriptors (closing them:
    // there is no room for them), shorter than asked while more is queued.
    CHECK(recv_text(a.get(), o) == "f");
    CHECK(recv_text(a.get(), {.deadline = spindle::Clock::now() + 5s, .fd_id = o.fd_id}) == "rest");
    REQUIRE(w.join());
  });
}

TEST_CASE("io: a closed fd's number reused with a new id, or none, is waited on afresh", "[io]") {
  spindle::test::on_workers([] {
    int number = -1;
    {
      auto [a, b] = unix_pair();
      number = a.get();
      auto w = send_later(b.get(), "old", 2ms);
      CHECK(recv_text(a.get(), {.fd_id = io::new_fd_id()}) == "old");
      REQUIRE(w.join());
    }
    // The lowest free numbers come back (POSIX): the new pair's first fd is
    // the closed one's number, now another file.
    auto [a, b] = unix_pair();
    CHECK(a.get() == number);
    auto w = send_later(b.get(), "new", 2ms);
    CHECK(recv_text(a.get(), {.fd_id = io::new_fd_id()}) == "new");
    REQUIRE(w.join());
    // Closed again, and its number used without an id.
    a.reset();
    auto [e, f] = unix_pair();
    CHECK(e.get() == number);
    w = send_later(f.get(), "bare", 2ms);
    CHECK(recv_text(e.get(), {.expect_wait = true}) == "bare");
    REQUIRE(w.join());
  });
}

TEST_CASE("io: an fd with an id also waited on without it (poll) keeps both kinds of wait",
          "[io]") {
  spindle::test::on_workers([] {
    auto [a, b] = unix_pair();
    const spindle::IoOptions o{.fd_id = io::new_fd_id()};
    auto w = send_later(b.get(), "x", 2ms);
    CHECK(recv_text(a.get(), o) == "x");
    REQUIRE(w.join());
    w = send_later(b.get(), "y", 2ms);
    CHECK((io::poll(a.get(), POLLIN).value() & POLLIN) != 0);
    REQUIRE(w.join());
    CHECK(recv_text(a.get(), o) == "y");
    w = send_later(b.get(), "z", 2ms);
    CHECK(recv_text(a.get(), o) == "z");
    REQUIRE(w.join());
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

TEST_CASE("io: openat2 opens with resolve flags, on io_uring and on epoll", "[io]") {
  spindle::test::TempDir dir;
  const std::string base = (dir.path() / "d").string();
  REQUIRE(::mkdir(base.c_str(), 0755) == 0);
  const int made = ::open((base + "/f").c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  REQUIRE(made >= 0);
  REQUIRE(::write(made, "openat2", 7) == 7);
  ::close(made);
  REQUIRE(::symlink("f", (base + "/link").c_str()) == 0);
  // kAuto is io_uring where the kernel allows it (SPINDLE_IO_BACKEND, when
  // set, picks the backend of both rounds).
  for (const auto backend : {spindle::IoBackendKind::kAuto, spindle::IoBackendKind::kEpoll}) {
    spindle::test::on_workers(
        [&] {
          INFO("backend " << spindle::current_runtime().io_backend());
          auto dirfd = io::openat(AT_FDCWD, base.c_str(), O_PATH | O_DIRECTORY, 0);
          REQUIRE(dirfd);
          UniqueFd d(*dirfd);
          const open_how beneath{.flags = O_RDONLY, .mode = 0, .resolve = RESOLVE_BENEATH};
          auto opened = io::openat2(d.get(), "link", beneath);
          REQUIRE(opened);
          UniqueFd f(*opened);
          CHECK((::fcntl(f.get(), F_GETFD) & FD_CLOEXEC) != 0);  // O_CLOEXEC is always added
          std::array<std::byte, 16> buf{};
          CHECK(text(std::span(buf).first(io::read(f.get(), buf, 0).value())) == "openat2");

          auto out = io::openat2(d.get(), "../d/f", beneath);
          REQUIRE_FALSE(out);
          CHECK(out.error() == std::errc::cross_device_link);  // EXDEV
          const open_how no_symlinks{.flags = O_RDONLY, .mode = 0, .resolve = RESOLVE_NO_SYMLINKS};
          auto link = io::openat2(d.get(), "link", no_symlinks);
          REQUIRE_FALSE(link);
          CHECK(link.error() == std::errc::too_many_symbolic_link_levels);  // ELOOP
          const open_how stray_mode{.flags = O_RDONLY, .mode = 0644, .resolve = 0};
          auto invalid = io::openat2(d.get(), "f", stray_mode);
          REQUIRE_FALSE(invalid);
          CHECK(invalid.error() == std::errc::invalid_argument);

          const open_how create{
              .flags = O_WRONLY | O_CREAT | O_EXCL, .mode = 0600, .resolve = RESOLVE_BENEATH};
          auto created = io::openat2(d.get(), "g", create);
          REQUIRE(created);
          ::close(*created);
          struct statx st{};
          REQUIRE(io::statx(d.get(), "g", 0, STATX_MODE, &st));
          CHECK((st.stx_mode & 07777) == 0600);
          REQUIRE(io::unlinkat(d.get(), "g", 0));
        },
        {1, 2}, spindle::Config{.io_backend = backend});
  }
}

TEST_CASE("io: readv fills several buffers and fallocate reserves space", "[io]") {
  spindle::test::TempDir dir;
  spindle::test::on_workers([&] {
    const std::string path = dir.fresh().string();
    auto opened = io::openat(AT_FDCWD, path.c_str(), O_RDWR | O_CREAT | O_EXCL, 0644);
    REQUIRE(opened);
    UniqueFd f(*opened);
    const iovec data{const_cast<char*>("readv in two parts"), 18};
    REQUIRE(io::write(f.get(), std::span(&data, 1), 0, 0, {.cancellable = false}).value() == 18);
    std::array<char, 5> head{};
    std::array<char, 32> rest{};
    const iovec into[2] = {{head.data(), head.size()}, {rest.data(), rest.size()}};
    CHECK(io::readv(f.get(), into, 0).value() == 18);
    CHECK(std::string(head.data(), 5) == "readv");
    CHECK(std::string(rest.data(), 13) == " in two parts");
    CHECK(io::readv(f.get(), into, 18).value() == 0);  // end of file

    auto grown = io::fallocate(f.get(), 0, 0, 1 << 20);
    if (!grown && grown.error() == std::errc::operation_not_supported) return;  // e.g. some FUSE
    REQUIRE(grown);
    struct statx st{};
    REQUIRE(io::statx(f.get(), "", AT_EMPTY_PATH, STATX_SIZE, &st));
    CHECK(st.stx_size == 1 << 20);
    REQUIRE(io::fallocate(f.get(), FALLOC_FL_KEEP_SIZE, 1 << 20, 1 << 20));
    REQUIRE(io::statx(f.get(), "", AT_EMPTY_PATH, STATX_SIZE, &st));
    CHECK(st.stx_size == 1 << 20);
    REQUIRE(::unlink(path.c_str()) == 0);
  });
}

TEST_CASE("io: splice moves a file through a pipe into a socket and back", "[io]") {
  spindle::test::TempDir dir;
  spindle::test::on_workers([&] {
    const std::string path = dir.fresh().string();
    std::string content(200'000, '\0');
    for (std::size_t i = 0; i < content.size(); ++i)
      content[i] = static_cast<char>(i * 7 + i / 251);
    auto opened = io::openat(AT_FDCWD, path.c_str(), O_RDWR | O_CREAT | O_EXCL, 0644);
    REQUIRE(opened);
    UniqueFd f(*opened);
    const iovec data{content.data(), content.size()};
    REQUIRE(io::write(f.get(), std::span(&data, 1), 0, 0, {.cancellable = false}).value() ==
            content.size());
    int p[2];
    REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
    UniqueFd pr(p[0]), pw(p[1]);
    auto [a, b] = unix_pair();
    // The reader drains the socket while the splices fill it.
    auto reader = spindle::spawn([&, fd = b.get()] {
      std::string got;
      std::array<std::byte, 8192> buf{};
      while (got.size() < content.size()) {
        auto n = io::recv(fd, buf, 0);
        if (!n || *n == 0) break;
        got += text(std::span(buf).first(*n));
      }
      return got;
    });
    std::uint64_t offset = 0;
    while (offset < content.size()) {
      const std::size_t in =
          io::splice(f.get(), offset, pw.get(), io::kStreamOffset, content.size() - offset, 0)
              .value();
      REQUIRE(in > 0);
      offset += in;
      for (std::size_t left = in; left > 0;) {
        const std::size_t out =
            io::splice(pr.get(), io::kStreamOffset, a.get(), io::kStreamOffset, left, 0).value();
        REQUIRE(out > 0);
        left -= out;
      }
    }
    CHECK(io::splice(f.get(), offset, pw.get(), io::kStreamOffset, 10, 0).value() == 0);  // EOF
    CHECK(reader.join().value() == content);

    // Back: socket -> pipe -> file, at an offset, never cancelled.
    CHECK(io::send(b.get(), bytes("spliced"), MSG_NOSIGNAL).value() == 7);
    CHECK(io::splice(a.get(), io::kStreamOffset, pw.get(), io::kStreamOffset, 64, 0).value() == 7);
    CHECK(
        io::splice(pr.get(), io::kStreamOffset, f.get(), 3, 7, 0, {.cancellable = false}).value() ==
        7);
    std::array<std::byte, 10> back{};
    CHECK(text(std::span(back).first(io::read(f.get(), back, 0).value())) ==
          content.substr(0, 3) + "spliced");
    REQUIRE(::unlink(path.c_str()) == 0);
  });
}

TEST_CASE("io: a splice waits for its pipe's data, and a reader gone is EPIPE without SIGPIPE",
          "[io]") {
  spindle::test::on_workers([] {
    int p[2];
    REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
    UniqueFd pr(p[0]), pw(p[1]);
    auto [a, b] = unix_pair();
    auto splicer = spindle::spawn(
        [&] { return io::splice(pr.get(), io::kStreamOffset, a.get(), io::kStreamOffset, 64, 0); });
    (void)spindle::this_fiber::sleep_for(5ms);
    REQUIRE(::write(pw.get(), "late", 4) == 4);
    CHECK(splicer.join().value().value() == 4);
    std::array<std::byte, 8> buf{};
    CHECK(text(std::span(buf).first(io::recv(b.get(), buf, 0).value())) == "late");

    // The peer closed: EPIPE, and the process lives on (no SIGPIPE).
    b.reset();
    REQUIRE(::write(pw.get(), "gone", 4) == 4);
    auto r = io::splice(pr.get(), io::kStreamOffset, a.get(), io::kStreamOffset, 64, 0);
    REQUIRE_FALSE(r);
    CHECK(r.error() == std::errc::broken_pipe);

    // A splice waiting for data ends at its deadline.
    std::array<char, 8> left{};
    REQUIRE(::read(pr.get(), left.data(), left.size()) == 4);  // what the failed splice left
    auto [c, d] = unix_pair();
    auto timed = io::splice(pr.get(), io::kStreamOffset, c.get(), io::kStreamOffset, 64, 0,
                            {.deadline = spindle::Clock::now() + 10ms});
    REQUIRE_FALSE(timed);
    CHECK(timed.error() == spindle::errc::timed_out);
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

namespace {

// A child of this process running `args`, and its pidfd.
struct PlainChild {
  pid_t pid = -1;
  UniqueFd pidfd;
};

PlainChild spawn_plain(std::initializer_list<const char*> args) {
  std::vector<char*> argv;
  for (const char* a : args) argv.push_back(const_cast<char*>(a));
  argv.push_back(nullptr);
  PlainChild c;
  REQUIRE(::posix_spawnp(&c.pid, argv[0], nullptr, nullptr, argv.data(), environ) == 0);
  c.pidfd.reset(static_cast<int>(::syscall(SYS_pidfd_open, c.pid, 0)));
  REQUIRE(c.pidfd);
  return c;
}

}  // namespace

TEST_CASE("io: waitid waits for a child's exit through its pidfd", "[io]") {
  if (::access("/bin/sh", X_OK) != 0 || ::access("/bin/sleep", X_OK) != 0) {
    SPINDLE_SKIP("/bin/sh or /bin/sleep is missing");
  }
  spindle::test::on_workers([] {
    PlainChild c = spawn_plain({"/bin/sh", "-c", "sleep 0.02; exit 7"});
    siginfo_t info{};
    REQUIRE(io::waitid(c.pidfd.get(), info, WEXITED));
    CHECK(info.si_pid == c.pid);
    CHECK(info.si_code == CLD_EXITED);
    CHECK(info.si_status == 7);
    // Waited for already: nothing is left to wait for.
    auto again = io::waitid(c.pidfd.get(), info, WEXITED);
    REQUIRE_FALSE(again);
    CHECK(again.error() == std::errc::no_child_process);

    // A deadline ends the wait and leaves the child running; once killed, it
    // is waited for.
    PlainChild s = spawn_plain({"/bin/sleep", "60"});
    auto timed =
        io::waitid(s.pidfd.get(), info, WEXITED, {.deadline = spindle::Clock::now() + 10ms});
    REQUIRE_FALSE(timed);
    CHECK(timed.error() == spindle::errc::timed_out);
    REQUIRE(::syscall(SYS_pidfd_send_signal, s.pidfd.get(), SIGKILL, nullptr, 0) == 0);
    REQUIRE(io::waitid(s.pidfd.get(), info, WEXITED));
    CHECK(info.si_pid == s.pid);
    CHECK(info.si_code == CLD_KILLED);
    CHECK(info.si_status == SIGKILL);
  });
}

TEST_CASE("io: nop completes", "[io]") {
  spindle::test::on_workers([] {
    for (int i = 0; i < 100; ++i) REQUIRE(io::nop());
  });
}

TEST_CASE("io: every operation has its name for dumps", "[io]") {
  using spindle::detail::io_code_name;
  using spindle::detail::IoCode;
  CHECK(std::string_view(io_code_name(IoCode::kNop)) == "nop");
  CHECK(std::string_view(io_code_name(IoCode::kRecv)) == "recv");
  CHECK(std::string_view(io_code_name(IoCode::kRead)) == "read");
  CHECK(std::string_view(io_code_name(IoCode::kFtruncate)) == "ftruncate");
  CHECK(std::string_view(io_code_name(IoCode::kPoll)) == "poll");
  CHECK(std::string_view(io_code_name(IoCode::kReadv)) == "readv");
  CHECK(std::string_view(io_code_name(IoCode::kFallocate)) == "fallocate");
  CHECK(std::string_view(io_code_name(IoCode::kSplice)) == "splice");
  CHECK(std::string_view(io_code_name(IoCode::kRecvmsg)) == "recvmsg");
  CHECK(std::string_view(io_code_name(IoCode::kWaitid)) == "waitid");
  CHECK(std::string_view(io_code_name(IoCode::kOpenat2)) == "openat2");
  CHECK(std::string_view(io_code_name(IoCode::kRecvPooled)) == "recv_pooled");
  CHECK(std::string_view(io_code_name(IoCode::kSqe)) == "sqe");
  CHECK(std::string_view(io_code_name(static_cast<IoCode>(200))) == "?");
}
