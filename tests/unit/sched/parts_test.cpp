// White-box tests of the scheduler's parts: Parker, IdleSet, GlobalQueue,
// Mailbox, TimerHeap.
#include <poll.h>
#include <sys/eventfd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "core/global_queue.hpp"
#include "core/park_word.hpp"
#include "core/scheduler.hpp"
#include "park/event_fd.hpp"
#include "park/idle_set.hpp"
#include "park/mailbox.hpp"
#include "park/parker.hpp"
#include "runtime_harness.hpp"
#include "spindle/uring/ring.hpp"
#include "spindle/uring/wake_source.hpp"
#include "time/timer_heap.hpp"

using namespace std::chrono_literals;
using spindle::detail::Fiber;

namespace {

bool readable(const spindle::detail::EventFd& e) {
  pollfd p{e.fd(), POLLIN, 0};
  return ::poll(&p, 1, 0) == 1;
}

// A fiber control block that never runs, for queue tests.
struct Dummy final : Fiber {
  explicit Dummy(spindle::detail::Scheduler& s) : Fiber(s) {}
  void run() override {}
  void discard() noexcept override {}
  void drop_value() noexcept override {}
};

}  // namespace

TEST_CASE("parker: an unpark before the park makes the park return at once", "[parker]") {
  spindle::detail::EventFd eventfd;
  spindle::detail::Parker p(&eventfd);
  p.clear();
  p.unpark();
  CHECK(p.signalled());
  CHECK(p.park(5s) == std::chrono::nanoseconds::zero());  // did not block
  // An unpark of a worker that is not blocked touches no eventfd.
  CHECK_FALSE(readable(eventfd));
}

TEST_CASE("parker: an unpark from another thread ends a futex park", "[parker]") {
  spindle::detail::EventFd eventfd;
  spindle::detail::Parker p(&eventfd);
  p.clear();
  std::thread t([&] {
    std::this_thread::sleep_for(20ms);
    p.unpark();
  });
  const auto slept = p.park(10s);
  t.join();
  CHECK(slept >= 10ms);
  CHECK(slept < 5s);
  CHECK_FALSE(p.signalled());  // consumed
}

TEST_CASE("parker: a park times out", "[parker]") {
  spindle::detail::EventFd eventfd;
  spindle::detail::Parker p(&eventfd);
  p.clear();
  const auto slept = p.park(20ms);
  CHECK(slept >= 15ms);
}

TEST_CASE("parker: an unpark during an eventfd block signals the eventfd once", "[parker]") {
  spindle::uring::Ring ring(spindle::uring::RingOptions{8});
  spindle::detail::EventFd eventfd;
  spindle::uring::WakeSource poll(eventfd.fd());
  spindle::detail::Parker p(&eventfd);
  p.clear();
  poll.arm(ring);
  REQUIRE(p.arm_eventfd());
  std::thread t([&] {
    std::this_thread::sleep_for(10ms);
    p.unpark();
    p.unpark();  // the second of an epoch makes no syscall
  });
  ring.wait(std::chrono::nanoseconds(5s));
  t.join();
  p.disarm();
  CHECK(poll.consume());
  eventfd_t writes = 0;
  REQUIRE(::eventfd_read(eventfd.fd(), &writes) == 0);
  CHECK(writes == 1);
  // Signalled before arming: arm refuses to block.
  p.clear();
  p.unpark();
  CHECK_FALSE(p.arm_eventfd());
}

TEST_CASE("idle set: pushes claim the lowest idle worker, each once", "[idle]") {
  spindle::detail::IdleSet idle(4);
  CHECK(idle.claim_one() == -1);
  idle.set_idle(2);
  idle.set_idle(1);
  CHECK(idle.claim_one() == 1);
  CHECK(idle.searching() == 1);  // counted as a searcher for the claimed worker
  CHECK(idle.claim_one() == 2);
  CHECK(idle.claim_one() == -1);
  // A claimed worker finds its bit already cleared.
  CHECK_FALSE(idle.clear_idle(1));
  idle.set_idle(3);
  CHECK(idle.clear_idle(3));
}

TEST_CASE("idle set: at most half of the workers search at once", "[idle]") {
  spindle::detail::IdleSet four(4);
  CHECK(four.try_begin_search());
  CHECK(four.try_begin_search());
  CHECK_FALSE(four.try_begin_search());
  CHECK_FALSE(four.end_search());
  CHECK(four.end_search());  // the last searcher
  spindle::detail::IdleSet two(2);
  CHECK(two.try_begin_search());
  CHECK_FALSE(two.try_begin_search());
}

TEST_CASE("global queue: the take share follows the reference", "[global]") {
  using spindle::detail::GlobalQueue;
  CHECK(GlobalQueue::share(8, 4) == 3);
  CHECK(GlobalQueue::share(129, 1) == 128);
  CHECK(GlobalQueue::share(1, 4) == 1);
  CHECK(GlobalQueue::share(0, 2) == 0);
}

TEST_CASE("global queue: FIFO batches, counted lengths", "[global]") {
  auto sched = spindle::detail::make_scheduler(spindle::Config{});
  spindle::detail::GlobalQueue q;
  std::vector<Fiber*> fibers;
  std::vector<spindle::detail::ReadyEntry*> entries;
  for (int i = 0; i < 10; ++i) {
    fibers.push_back(new Dummy(*sched));
    entries.push_back(spindle::detail::ready_entry(fibers.back()));
  }
  CHECK(q.empty());
  for (int i = 0; i < 3; ++i) q.push(entries[i]);
  q.push(entries.data() + 3, 7);
  CHECK(q.len() == 10);
  spindle::detail::ReadyEntry* out[16] = {};
  REQUIRE(q.take(out, 4) == 4);
  for (int i = 0; i < 4; ++i) CHECK(spindle::detail::claim_entry(out[i]) == fibers[i]);
  CHECK(q.len() == 6);
  REQUIRE(q.take(out, 100) == 6);
  for (int i = 0; i < 6; ++i) CHECK(spindle::detail::claim_entry(out[i]) == fibers[i + 4]);
  CHECK(q.empty());
  CHECK(q.take(out, 1) == 0);
  CHECK(q.take(out, 0) == 0);
  for (auto* f : fibers) f->unref();
}

TEST_CASE("mailbox: one unpark per batch, messages in order", "[mailbox]") {
  auto sched = spindle::detail::make_scheduler(spindle::Config{});
  spindle::detail::EventFd eventfd;
  spindle::detail::Parker parker(&eventfd);
  spindle::detail::Mailbox box(parker);
  Dummy f(*sched);
  parker.clear();
  CHECK(box.empty());
  for (std::uint64_t i = 0; i < 3; ++i)
    box.send({spindle::detail::MailMessage::Kind::kResume, &f, i});
  CHECK_FALSE(box.empty());
  CHECK(parker.signalled());
  std::vector<spindle::detail::MailMessage> out;
  box.take(out);
  REQUIRE(out.size() == 3);
  for (std::uint64_t i = 0; i < 3; ++i) CHECK(out[i].epoch == i);
  CHECK(box.empty());
}

TEST_CASE("timer heap: expires due entries in deadline order, holding references", "[timers]") {
  auto sched = spindle::detail::make_scheduler(spindle::Config{});
  auto* f = new Dummy(*sched);
  {
    spindle::detail::TimerHeap heap(&spindle::detail::park_waiting);
    const auto t0 = spindle::Clock::now();
    heap.add(t0 + 3ms, f, 3);
    heap.add(t0 + 1ms, f, 1);
    heap.add(t0 + 2ms, f, 2);
    heap.add(t0 + 1h, f, 4);
    CHECK(heap.next() == t0 + 1ms);
    std::vector<std::uint64_t> fired;
    heap.expire(t0 + 2500us, [&](Fiber*, std::uint64_t e) { fired.push_back(e); });
    CHECK(fired == std::vector<std::uint64_t>{1, 2});
    CHECK(heap.size() == 2);
    CHECK(heap.next() == t0 + 3ms);
  }  // the heap drops its remaining references
  f->unref();  // the last one: LeakSanitizer would report a leak otherwise
}

TEST_CASE("timer heap: stale entries are compacted away", "[timers]") {
  auto sched = spindle::detail::make_scheduler(spindle::Config{});
  auto* f = new Dummy(*sched);
  spindle::detail::TimerHeap heap(&spindle::detail::park_waiting);
  const auto later = spindle::Clock::now() + 1h;
  // 200 entries for parks that are long over (f's park word is not armed).
  for (std::uint64_t e = 1; e <= 200; ++e) heap.add(later, f, e);
  for (int i = 0; i < 200; ++i) heap.note_stale();
  int fired = 0;
  heap.expire(spindle::Clock::now(), [&](Fiber*, std::uint64_t) { ++fired; });
  CHECK(fired == 0);
  CHECK(heap.size() == 0);
  f->unref();
}
