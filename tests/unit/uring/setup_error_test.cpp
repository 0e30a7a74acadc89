// What a user sees when io_uring is disabled: the ring constructor and the
// kernel probe explain the likely cause. A forked child blocks io_uring_setup
// with a seccomp filter (as container runtimes do) and checks the messages.

#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <stdexcept>
#include <string>
#include <system_error>

#include "seccomp.hpp"
#include "skip.hpp"
#include "spindle/uring/probe.hpp"
#include "spindle/uring/ring.hpp"

namespace spindle::uring {
namespace {

constexpr int kNoSeccomp = 3;

bool mentions(const char* what, const char* needle) {
  return std::string(what).find(needle) != std::string::npos;
}

// Exit status of the child: 0 if both messages are right.
int child_main() {
  if (!test::block_io_uring_setup()) return kNoSeccomp;
  int status = 0;
  try {
    Ring ring(RingOptions{.entries = 8});
    status |= 1 << 2;  // constructed anyway
  } catch (const std::system_error& e) {
    if (e.code().value() != EPERM) status |= 1 << 3;
    if (!mentions(e.what(), "io_uring could not be set up")) status |= 1 << 4;
    if (!mentions(e.what(), "kernel.io_uring_disabled")) status |= 1 << 5;
    if (!mentions(e.what(), "seccomp")) status |= 1 << 6;
  } catch (...) {
    status |= 1 << 7;
  }
  try {
    require_kernel_support();
    status |= 1 << 8;
  } catch (const std::runtime_error& e) {
    if (!mentions(e.what(), "io_uring is unavailable")) status |= 1 << 9;
    if (!mentions(e.what(), "kernel.io_uring_disabled")) status |= 1 << 10;
  }
  return status == 0 ? 0 : 100 + __builtin_ctz(static_cast<unsigned>(status));
}

TEST_CASE("uring ring: setup failure names io_uring_disabled and seccomp", "[uring][ring]") {
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) ::_exit(child_main());
  int wstatus = 0;
  REQUIRE(::waitpid(pid, &wstatus, 0) == pid);
  REQUIRE(WIFEXITED(wstatus));
  if (WEXITSTATUS(wstatus) == kNoSeccomp) SPINDLE_SKIP("seccomp filters are not available");
  INFO("child exit status " << WEXITSTATUS(wstatus) << " (100 + first failed check bit)");
  CHECK(WEXITSTATUS(wstatus) == 0);
}

}  // namespace
}  // namespace spindle::uring
