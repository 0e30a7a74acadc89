// spindle::signals::SignalSet: signals sent to the process reach a fiber's
// wait, each once; timeouts, aborts, and the rules the constructor checks.
// Each SignalSet is made before the test's runtimes start their threads, as
// the mask rule asks.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <stdexcept>
#include <thread>

#include "proc_test_support.hpp"
#include "runtime_harness.hpp"

using namespace std::chrono_literals;
using Catch::Matchers::Contains;
using spindle::errc;
using spindle::signals::SignalInfo;
using spindle::signals::SignalSet;

namespace {

void send(int sig) { REQUIRE(::kill(::getpid(), sig) == 0); }

bool blocked_here(int sig) {
  sigset_t mask;
  REQUIRE(::pthread_sigmask(SIG_BLOCK, nullptr, &mask) == 0);
  return sigismember(&mask, sig) == 1;
}

}  // namespace

TEST_CASE("signals: two signals in a row are each returned once, in order", "[signals]") {
  SignalSet set{SIGUSR1, SIGUSR2};
  spindle::test::on_workers([&] {
    send(SIGUSR1);
    send(SIGUSR2);
    const SignalInfo first = set.wait().value();
    CHECK(first.number == SIGUSR1);
    CHECK(first.code == SI_USER);
    CHECK(first.pid == ::getpid());
    CHECK(first.uid == ::getuid());
    CHECK(set.wait().value().number == SIGUSR2);
    auto none = set.wait(10ms);
    REQUIRE_FALSE(none);
    CHECK(none.error() == errc::timed_out);
  });
}

TEST_CASE("signals: real-time signals queue and come back in the order sent", "[signals]") {
  const int rt = SIGRTMIN + 1;
  SignalSet set{rt};
  spindle::test::on_workers([&] {
    for (int value : {1, 2, 3})
      REQUIRE(::sigqueue(::getpid(), rt, sigval{.sival_int = value}) == 0);
    for (int value : {1, 2, 3}) {
      const SignalInfo s = set.wait().value();
      CHECK(s.number == rt);
      CHECK(s.code == SI_QUEUE);
      CHECK(s.value == value);
    }
    CHECK(set.wait(5ms).error() == errc::timed_out);
  });
}

TEST_CASE("signals: a fiber parked in wait wakes for a signal sent later", "[signals]") {
  SignalSet set{SIGUSR1};
  spindle::test::on_workers([&] {
    auto waiter = spindle::spawn([&] { return set.wait(); });
    (void)spindle::this_fiber::sleep_for(spindle::test::kSettle);
    CHECK_FALSE(waiter.is_finished());
    send(SIGUSR1);
    CHECK(waiter.join().value().value().number == SIGUSR1);
  });
}

TEST_CASE("signals: a wait with a timeout and no signal returns timed_out", "[signals]") {
  SignalSet set{SIGUSR2};
  spindle::test::on_workers([&] {
    auto r = set.wait(10ms);
    REQUIRE_FALSE(r);
    CHECK(r.error() == errc::timed_out);
    auto scoped = spindle::this_fiber::with_timeout(10ms, [&] { return set.wait(); });
    REQUIRE_FALSE(scoped);
    CHECK(scoped.error() == errc::timed_out);
    // A signal already pending is returned even with no time left.
    send(SIGUSR2);
    CHECK(set.wait(0ms).value().number == SIGUSR2);
  });
}

TEST_CASE("signals: an aborted wait returns aborted and leaves the signal for the next",
          "[signals]") {
  SignalSet set{SIGHUP};
  spindle::test::on_workers([&] {
    auto waiter = spindle::spawn([&] { return set.wait(); });
    (void)spindle::this_fiber::sleep_for(spindle::test::kSettle);
    waiter.abort();
    CHECK(spindle::test::joined_error(waiter) == errc::aborted);
    send(SIGHUP);
    CHECK(set.wait().value().number == SIGHUP);
  });
}

TEST_CASE("signals: a signal in a live set cannot be in a second one", "[signals]") {
  {
    SignalSet first{SIGUSR1, SIGUSR2};
    CHECK_THROWS_MATCHES(
        SignalSet({SIGHUP, SIGUSR2}), std::invalid_argument,
        Catch::Matchers::Message("spindle::signals::SignalSet: SIGUSR2 is already in another "
                                 "SignalSet (each signal goes to one signalfd reader, so two sets "
                                 "may not share one)"));
    SignalSet other{SIGHUP};  // the refused set claimed nothing
    SignalSet moved = std::move(first);
    CHECK(moved.contains(SIGUSR1));
    CHECK(first.native_handle() == -1);
  }
  SignalSet again{SIGUSR1, SIGUSR2, SIGHUP};  // all given up
  CHECK(again.contains(SIGHUP));
}

TEST_CASE("signals: a set of signals that cannot be waited for is refused", "[signals]") {
  CHECK_THROWS_WITH(SignalSet({}), Contains("the set of signals is empty"));
  CHECK_THROWS_WITH(SignalSet({SIGKILL}), Contains("SIGKILL cannot be blocked"));
  CHECK_THROWS_WITH(SignalSet({SIGTERM, SIGSEGV}), Contains("SIGSEGV reports a fault"));
  CHECK_THROWS_WITH(SignalSet({SIGRTMIN + 5}), Contains("SIGRTMIN+5 is the stall detector's"));
  CHECK_THROWS_WITH(SignalSet({0}), Contains("signal 0 is not a signal"));
  CHECK_THROWS_WITH(SignalSet({SIGRTMAX + 1}), Contains("is not a signal"));
  CHECK_FALSE(blocked_here(SIGTERM));  // nothing was blocked
}

TEST_CASE("signals: a thread that does not block the set makes the constructor throw",
          "[signals]") {
  std::atomic<bool> started{false};
  std::atomic<bool> done{false};
  std::thread other([&] {
    started = true;
    while (!done.load()) std::this_thread::sleep_for(1ms);
  });
  // A thread being started blocks every signal until it runs its function.
  while (!started.load()) std::this_thread::yield();
  CHECK_THROWS_MATCHES(SignalSet({SIGWINCH}), std::logic_error,
                       Catch::Matchers::Predicate<std::logic_error>([](const std::logic_error& e) {
                         const std::string what = e.what();
                         return what.find("does not block SIGWINCH") != std::string::npos &&
                                what.find("construct the SignalSet before the Runtime") !=
                                    std::string::npos;
                       }));
  CHECK_FALSE(blocked_here(SIGWINCH));  // the calling thread's mask is restored
  done = true;
  other.join();
  SignalSet alone{SIGWINCH};  // the only thread now
  CHECK(blocked_here(SIGWINCH));
}
