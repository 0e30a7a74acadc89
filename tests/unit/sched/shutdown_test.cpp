#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "runtime_harness.hpp"

using namespace std::chrono_literals;
using spindle::errc;
namespace tf = spindle::this_fiber;

TEST_CASE("shutdown aborts fibers pending on every worker and waits for them", "[shutdown]") {
  for (std::size_t workers : {1, 2, 4}) {
    INFO("workers = " << workers);
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    std::atomic<int> sleepers{0}, receivers{0}, readers{0}, unstarted_ran{0}, lockers{0};
    std::atomic<int> closures_destroyed{0};
    struct Tracked {
      std::atomic<int>* destroyed;
      explicit Tracked(std::atomic<int>* d) : destroyed(d) {}
      Tracked(Tracked&& o) noexcept : destroyed(std::exchange(o.destroyed, nullptr)) {}
      ~Tracked() {
        if (destroyed) ++*destroyed;
      }
    };
    spindle::Mutex mutex;
    const auto t0 = std::chrono::steady_clock::now();
    {
      spindle::Runtime rt(spindle::Config{.workers = workers});
      rt.run([&] {
        static spindle::Channel<int> never;  // nobody sends
        spindle::WaitGroup started;
        for (int i = 0; i < 64; ++i) {
          started.add(3);
          spindle::spawn([&] {
            started.done();
            if (tf::sleep_for(100s).error() == errc::aborted) sleepers++;
          });
          spindle::spawn([&] {
            started.done();
            if (never.recv().error() == errc::aborted) receivers++;
          });
          spindle::spawn([&] {
            started.done();
            char c;
            auto r = spindle::io::read(fds[0], std::as_writable_bytes(std::span(&c, 1)), 0);
            if (!r && r.error() == errc::aborted) readers++;
          });
        }
        REQUIRE(started.wait());
        // A mutex holder and a waiter: the uninterruptible lock is handed over.
        mutex.lock();
        spindle::spawn([&] {
          mutex.lock();
          lockers++;
          mutex.unlock();
        });
        (void)tf::sleep_for(1ms);
        mutex.unlock();
        // Spawned just before the root returns: on one worker none has started;
        // on more, idle workers may steal and run some first.
        for (int i = 0; i < 1000; ++i) {
          spindle::spawn([&, t = Tracked(&closures_destroyed)] { unstarted_ran++; });
        }
      });
    }
    CHECK(std::chrono::steady_clock::now() - t0 < 10s);
    CHECK(sleepers == 64);
    CHECK(receivers == 64);
    CHECK(readers == 64);
    CHECK(lockers == 1);
    CHECK(closures_destroyed == 1000);  // every closure destroyed once, run or not
    if (workers == 1) CHECK(unstarted_ran == 0);
    ::close(fds[0]);
    ::close(fds[1]);
  }
}

TEST_CASE("a write started by an aborted fiber completes during shutdown", "[shutdown]") {
  const int fd = ::open("/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  REQUIRE(fd >= 0);
  const std::string data(1 << 20, 'w');
  // One worker: once `started` is set the writer runs on into io::write without a
  // suspension point, so the root runs again only after the write is in flight.
  std::atomic<bool> started{false};
  spindle::Runtime rt(spindle::Config{.workers = 1});
  rt.run([&] {
    spindle::spawn([&] {
      started = true;
      const iovec v{const_cast<char*>(data.data()), data.size()};
      (void)spindle::io::write(fd, std::span(&v, 1), 0, 0, {.cancellable = false});
    });
    while (!started) (void)tf::yield();
  });
  CHECK(::lseek(fd, 0, SEEK_END) == static_cast<off_t>(data.size()));
  ::close(fd);
}

TEST_CASE("fibers spawned during shutdown never run", "[shutdown]") {
  std::atomic<int> late_ran{0};
  spindle::Runtime rt(spindle::Config{.workers = 2});
  rt.run([&] {
    spindle::spawn([&] {
      (void)tf::sleep_for(100s);  // aborted at shutdown
      for (int i = 0; i < 100; ++i) spindle::spawn([&] { late_ran++; });
    });
    (void)tf::sleep_for(1ms);
  });
  CHECK(late_ran == 0);
}

TEST_CASE("a plain thread holding a RuntimeHandle sees the runtime stop", "[shutdown]") {
  std::atomic<bool> stop{false};
  std::atomic<int> spawned_ok{0}, refused{0};
  std::thread t;
  {
    spindle::Runtime rt;
    rt.run([&] {
      auto handle = spindle::current_runtime();
      t = std::thread([&, handle] {
        while (!stop) {
          auto h = handle.spawn([] { return 1; });
          if (h.join()) {
            spawned_ok++;
          } else {
            refused++;
          }
        }
      });
      while (spawned_ok < 10) (void)tf::sleep_for(1ms);
    });
  }
  while (refused == 0) std::this_thread::sleep_for(1ms);
  stop = true;
  t.join();
  CHECK(spawned_ok >= 10);
  CHECK(refused >= 1);
}
