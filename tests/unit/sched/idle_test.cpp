#include <sys/resource.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>

#include "runtime_harness.hpp"

using namespace std::chrono_literals;

namespace {

std::chrono::microseconds process_cpu() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return std::chrono::seconds(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         std::chrono::microseconds(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

}  // namespace

TEST_CASE("idle workers burn no CPU: one idle second costs under 50 ms", "[idle]") {
  for (std::size_t workers : {2, 4}) {
    INFO("workers = " << workers);
    const auto cpu = spindle::test::run(
        [] {
          (void)spindle::this_fiber::sleep_for(50ms);  // let every worker go idle
          const auto before = process_cpu();
          (void)spindle::this_fiber::sleep_for(1s);
          return process_cpu() - before;
        },
        spindle::Config{.workers = workers});
    CHECK(cpu < 50ms);
  }
}

TEST_CASE("idle workers with I/O in flight burn no CPU either", "[idle]") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const auto cpu = spindle::test::run([&] {
    char c;
    // A read that never completes keeps the worker's ring busy while it parks.
    spindle::spawn(
        [&] { (void)spindle::io::read(fds[0], std::as_writable_bytes(std::span(&c, 1)), 0); });
    (void)spindle::this_fiber::sleep_for(50ms);
    const auto before = process_cpu();
    (void)spindle::this_fiber::sleep_for(1s);
    return process_cpu() - before;
  });
  CHECK(cpu < 50ms);
  ::close(fds[0]);
  ::close(fds[1]);
}
