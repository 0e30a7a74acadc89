// this_fiber::with_deadline / with_timeout: every blocking call inside that
// may be cut short ends at the scope's deadline with errc::timed_out; own
// deadlines keep their meaning; scopes nest and end with their call; writes,
// syncs and Mutex::lock run to their end.
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "runtime_harness.hpp"

using namespace std::chrono_literals;
using spindle::Channel;
using spindle::Clock;
using spindle::errc;
using spindle::kNoDeadline;
namespace tf = spindle::this_fiber;

namespace {

constexpr auto kScope = 10ms;

// Runs `call` in a kScope scope; it must end with errc::timed_out, and not
// before the scope's deadline.
template <class Call>
void check_cut_short(const char* what, Call call) {
  INFO(what);
  const auto start = Clock::now();
  const std::error_code e = tf::with_timeout(kScope, call);
  CHECK(e == errc::timed_out);
  CHECK(Clock::now() - start >= kScope);
}

template <class R>
std::error_code error_of(const R& r) {
  return r ? std::error_code() : r.error();
}

}  // namespace

TEST_CASE("deadline scope: every kind of blocking call inside ends with errc::timed_out",
          "[deadline_scope]") {
  spindle::test::on_workers([] {
    Channel<int> ch(0);
    check_cut_short("channel recv", [&] { return error_of(ch.recv()); });
    check_cut_short("channel send", [&] { return error_of(ch.send(1)); });
    check_cut_short("select", [&] {
      spindle::RecvCase r(ch);
      return error_of(spindle::select(r));
    });
    spindle::Mutex m;
    m.lock();
    check_cut_short("mutex try_lock_until",
                    [&] { return error_of(m.try_lock_until(kNoDeadline)); });
    check_cut_short("condvar", [&] {
      spindle::CondVar cv;
      std::unique_lock<spindle::Mutex> held(m, std::adopt_lock);
      auto r = cv.wait(held);
      CHECK(held.owns_lock());
      held.release();
      return error_of(r);
    });
    m.unlock();
    spindle::Event event;
    check_cut_short("event", [&] { return error_of(event.wait()); });
    spindle::Semaphore sem(0);
    check_cut_short("semaphore", [&] { return error_of(sem.acquire()); });
    spindle::WaitGroup wg;
    wg.add(1);
    check_cut_short("wait group", [&] { return error_of(wg.wait()); });
    wg.done();
    auto blocked = spindle::spawn([&] { (void)event.wait(); });
    check_cut_short("join", [&] { return error_of(blocked.join()); });
    event.set();
    CHECK(blocked.join().has_value());  // a join cut short can be repeated
    check_cut_short("sleep", [] { return error_of(tf::sleep_for(1h)); });
    {
      spindle::StopSignal signal = tf::context().stopped();
      check_cut_short("stop signal", [&] { return error_of(signal.wait()); });
    }
    int fds[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0);
    std::byte buf[16];
    check_cut_short("io recv", [&] { return error_of(spindle::io::recv(fds[0], buf, 0)); });
    check_cut_short("io poll", [&] { return error_of(spindle::io::poll(fds[0], POLLIN)); });
    ::close(fds[0]);
    ::close(fds[1]);
  });
}

TEST_CASE("deadline scope: the other channel kinds, RwLock, Barrier and Interval end with it",
          "[deadline_scope]") {
  spindle::test::on_workers([] {
    auto [otx, orx] = spindle::oneshot<int>();
    check_cut_short("oneshot recv", [&] { return error_of(orx.recv()); });
    auto [btx, brx] = spindle::broadcast<int>(4);
    check_cut_short("broadcast recv", [&] { return error_of(brx.recv()); });
    auto [wtx, wrx] = spindle::watch<int>(0);
    check_cut_short("watch changed", [&] { return error_of(wrx.changed()); });
    spindle::RwLock rw;
    rw.lock();
    check_cut_short("rw_lock shared",
                    [&] { return error_of(rw.try_lock_shared_until(kNoDeadline)); });
    rw.unlock();
    spindle::Barrier barrier(2);
    check_cut_short("barrier", [&] { return error_of(barrier.arrive_and_wait()); });
    spindle::Interval interval(Clock::now() + 1h, 1h);
    check_cut_short("interval", [&] { return error_of(interval.tick()); });
  });
}

TEST_CASE("deadline scope: a task group's wait aborts the group at the deadline",
          "[deadline_scope][task_group]") {
  spindle::test::on_workers([] {
    spindle::Event never;
    std::atomic<int> aborted{0};
    std::atomic<int> ended{0};
    check_cut_short("task group", [&] {
      spindle::TaskGroup group;
      for (int i = 0; i < 3; ++i) {
        // A member cut short reports its errc::aborted: not the group's answer.
        group.spawn([&]() -> spindle::Result<void> {
          auto r = never.wait();
          if (!r && r.error() == errc::aborted) ++aborted;
          ++ended;
          return r;
        });
      }
      return error_of(group.wait());
    });
    CHECK(ended.load() == 3);  // every member ended before the scope returned
    CHECK(aborted.load() == 3);
    // A group whose fibers all finish before the deadline succeeds.
    tf::with_timeout(1h, [] {
      spindle::TaskGroup quick;
      quick.spawn([] {});
      CHECK(quick.wait().has_value());
    });
  });
}

TEST_CASE("deadline scope: join_next aborts the set at the deadline and says so",
          "[deadline_scope][join_set]") {
  spindle::test::on_workers([] {
    spindle::Event never;
    spindle::JoinSet<int> set;
    set.spawn([] { return 1; });
    set.spawn([&] { return never.wait().has_value() ? 2 : -1; });
    std::vector<int> values;
    std::vector<std::error_code> errors;
    tf::with_timeout(kScope, [&] {
      while (auto r = set.join_next()) {
        if (*r) {
          values.push_back(**r);
        } else {
          errors.push_back(r->error());
        }
      }
    });
    CHECK(set.cut_short());
    CHECK(values == std::vector<int>{1});
    // The blocked fiber was aborted, so it joins as aborted.
    CHECK(errors == std::vector<std::error_code>{make_error_code(errc::aborted)});
    CHECK(set.empty());
  });
}

TEST_CASE("deadline scope: own deadlines keep their meaning; the earlier one ends the call",
          "[deadline_scope]") {
  spindle::test::on_workers([] {
    spindle::Event event;
    tf::with_timeout(1h, [&] {
      // Its own deadline first: a timed wait says false, as outside a scope.
      auto r = event.wait_for(5ms);
      REQUIRE(r.has_value());
      CHECK_FALSE(*r);
      spindle::TimerCase timer = spindle::TimerCase::after(5ms);
      CHECK(spindle::select(timer).value() == 0);
    });
    tf::with_timeout(5ms, [&] {
      // The scope's first: errc::timed_out, not false.
      CHECK(event.wait_for(1h).error() == errc::timed_out);
      CHECK(spindle::select(spindle::TimerCase::after(1h)).error() == errc::timed_out);
    });
  });
}

TEST_CASE("deadline scope: scopes nest, and each ends with its call", "[deadline_scope]") {
  spindle::test::on_workers([] {
    CHECK(tf::deadline() == kNoDeadline);
    const auto outer = Clock::now() + 1h;
    tf::with_deadline(outer, [&] {
      CHECK(tf::deadline() == outer);
      tf::with_deadline(outer + 1h, [&] { CHECK(tf::deadline() == outer); });
      const auto inner = outer - 30min;
      const int v = tf::with_deadline(inner, [&] {
        CHECK(tf::deadline() == inner);
        return 7;
      });
      CHECK(v == 7);
      CHECK(tf::deadline() == outer);
      CHECK_THROWS_AS(tf::with_deadline(inner, []() -> int { throw std::runtime_error("x"); }),
                      std::runtime_error);
      CHECK(tf::deadline() == outer);
    });
    CHECK(tf::deadline() == kNoDeadline);
    // A fiber's scope is its own: a child spawned inside starts without one.
    tf::with_timeout(1h, [] {
      CHECK(spindle::spawn([] { return tf::deadline(); }).join().value() == kNoDeadline);
    });
  });
}

TEST_CASE("deadline scope: calls that need not wait succeed after the deadline",
          "[deadline_scope]") {
  spindle::test::on_workers([] {
    Channel<int> ch(1);
    spindle::Mutex m;
    tf::with_deadline(Clock::now() - 1s, [&] {
      CHECK(ch.send(1).has_value());
      CHECK(ch.recv().value() == 1);
      CHECK(m.try_lock_until(kNoDeadline).value());
      m.unlock();
      spindle::Event set;
      set.set();
      CHECK(set.wait().has_value());
    });
  });
}

TEST_CASE("deadline scope: calls that cannot be cancelled and Mutex::lock are never cut short",
          "[deadline_scope]") {
  spindle::test::on_workers([] {
    char path[] = "/tmp/spindle-scope-XXXXXX";
    const int fd = ::mkstemp(path);
    REQUIRE(fd >= 0);
    ::unlink(path);
    std::string data(64 * 1024, 'x');
    tf::with_deadline(Clock::now() - 1s, [&] {
      const iovec v{data.data(), data.size()};
      auto wrote = spindle::io::write(fd, {&v, 1}, 0, 0, {.cancellable = false});
      REQUIRE(wrote.has_value());
      CHECK(*wrote == data.size());
      CHECK(spindle::io::fsync(fd, false).has_value());
    });
    ::close(fd);

    spindle::Mutex m;
    m.lock();
    auto holder = spindle::spawn([&] {
      (void)tf::sleep_for(2 * kScope);
      m.unlock();
    });
    const auto start = Clock::now();
    tf::with_timeout(kScope, [&] { m.lock(); });
    CHECK(Clock::now() - start >= 2 * kScope);
    m.unlock();
    holder.join().value();
  });
}

TEST_CASE("deadline scope: on a plain thread", "[deadline_scope][thread]") {
  Channel<int> ch(0);
  std::error_code e;
  std::thread t([&] {
    e = tf::with_timeout(kScope, [&] { return error_of(ch.recv()); });
    CHECK(tf::deadline() == kNoDeadline);
  });
  t.join();
  CHECK(e == errc::timed_out);
}
