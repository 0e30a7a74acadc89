// The scheduler workloads on Boost.Fiber, the baseline, written the way its
// documentation and its own benchmarks use it:
//  - 1 worker: the calling thread with round_robin. N >= 2 workers: the
//    calling thread plus N-1 threads, each with
//    use_scheduling_algorithm<work_stealing>(N) (its default: idle threads
//    spin looking for work rather than sleep), then a barrier; at the end the
//    helpers' main fibers wait on a fiber condition variable until told to
//    stop, and are joined.
//  - Stacks from pooled_fixedsize_stack of spindle's stack size. The pool is
//    not thread-safe and work stealing frees a stack on whichever thread the
//    fiber ends, so with >= 2 workers one spin lock guards it.
//  - Fibers start with launch::post (queued, as spindle's spawn) and are joined
//    or detached exactly where the spindle version joins or detaches.
// work_stealing keeps process-wide state (a thread count fixed by the first
// constructor, a static barrier), so it works once per process: main.cpp runs
// every measurement in a child process of its own.

#include <array>
#include <atomic>
#include <barrier>
#include <boost/fiber/all.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "measure.hpp"
#include "workloads.hpp"

namespace spindle::perf {
namespace {

namespace bf = boost::fibers;

// Test-and-test-and-set; held only around a pool allocation or free.
class SpinLock {
 public:
  void lock() noexcept {
    while (locked_.exchange(true, std::memory_order_acquire)) {
      while (locked_.load(std::memory_order_relaxed)) __builtin_ia32_pause();
    }
  }
  void unlock() noexcept { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

// A StackAllocator over one shared pooled_fixedsize_stack. Copied into every
// fiber (as pooled_fixedsize_stack itself is, by reference count).
// Thread-safe when `locked`.
class PooledStacks {
 public:
  PooledStacks(std::size_t stack_size, bool locked)
      // next_size 32 as Boost's default; max_size caps one growth step at 1024
      // stacks so the pool never segregates (touches) far more than it uses.
      : shared_(std::make_shared<Shared>(stack_size, locked)) {}

  boost::context::stack_context allocate() const {
    if (!shared_->locked) return shared_->pool.allocate();
    std::lock_guard g(shared_->lock);
    return shared_->pool.allocate();
  }
  void deallocate(boost::context::stack_context& sctx) const noexcept {
    if (!shared_->locked) return shared_->pool.deallocate(sctx);
    std::lock_guard g(shared_->lock);
    shared_->pool.deallocate(sctx);
  }

 private:
  struct Shared {
    Shared(std::size_t stack_size, bool l) : pool(stack_size, 32, 1024), locked(l) {}
    SpinLock lock;
    bf::pooled_fixedsize_stack pool;  // guarded by lock when `locked`
    const bool locked;
  };
  std::shared_ptr<Shared> shared_;
};

// The scheduler threads of one measurement. The constructor returns with the
// calling thread's algorithm installed and every helper thread registered.
// Not thread-safe; construct and destroy on the calling thread.
class Pool {
 public:
  explicit Pool(std::size_t workers) : ready_(static_cast<std::ptrdiff_t>(workers)) {
    if (workers == 1) {
      bf::use_scheduling_algorithm<bf::algo::round_robin>();
      return;
    }
    const auto n = static_cast<std::uint32_t>(workers);
    for (std::size_t i = 1; i < workers; ++i) {
      threads_.emplace_back([this, n] {
        bf::use_scheduling_algorithm<bf::algo::work_stealing>(n);
        ready_.arrive_and_wait();
        // This thread's main fiber waits here; its scheduler runs and steals
        // fibers meanwhile.
        std::unique_lock lk(mutex_);
        cv_.wait(lk, [this] { return stop_; });
      });
    }
    bf::use_scheduling_algorithm<bf::algo::work_stealing>(n);
    ready_.arrive_and_wait();
  }
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;
  // Releases the helpers; each runs its remaining fibers to the end and exits.
  ~Pool() {
    {
      std::unique_lock lk(mutex_);
      stop_ = true;
      cv_.notify_all();
    }
    for (auto& t : threads_) t.join();
  }

 private:
  // A member, not a local of the constructor: a helper may still be inside
  // arrive_and_wait() when the constructor returns.
  std::barrier<> ready_;
  bf::mutex mutex_;
  bf::condition_variable cv_;
  bool stop_ = false;  // guarded by mutex_
  std::vector<std::thread> threads_;
};

// One-shot event for fibers: the Boost.Fiber counterpart of spindle::Event.
class FiberEvent {
 public:
  void set() {
    std::unique_lock lk(mutex_);
    set_ = true;
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock lk(mutex_);
    cv_.wait(lk, [this] { return set_; });
  }

 private:
  bf::mutex mutex_;
  bf::condition_variable cv_;
  bool set_ = false;
};

// The Boost.Fiber counterpart of spindle::WaitGroup.
class FiberWaitGroup {
 public:
  explicit FiberWaitGroup(std::uint64_t n) : count_(n) {}
  void done() {
    std::unique_lock lk(mutex_);
    if (--count_ == 0) cv_.notify_all();
  }
  void wait() {
    std::unique_lock lk(mutex_);
    cv_.wait(lk, [this] { return count_ == 0; });
  }

 private:
  bf::mutex mutex_;
  bf::condition_variable cv_;
  std::uint64_t count_;
};

template <class F>
bf::fiber post(const PooledStacks& stacks, F&& fn) {
  return bf::fiber(bf::launch::post, std::allocator_arg, stacks, std::forward<F>(fn));
}

PooledStacks stacks_for(const Params& p) { return PooledStacks(p.stack_size, p.workers > 1); }

constexpr std::uint64_t kSkynetFanout = 10;

std::uint64_t skynet(const PooledStacks& stacks, std::uint64_t num, std::uint64_t size) {
  if (size == 1) return num;
  const std::uint64_t sub = size / kSkynetFanout;
  std::array<std::uint64_t, kSkynetFanout> results{};
  std::array<bf::fiber, kSkynetFanout> children;
  for (std::uint64_t i = 0; i < kSkynetFanout; ++i) {
    children[i] = post(stacks, [&stacks, &results, num, sub, i] {
      results[i] = skynet(stacks, num + i * sub, sub);
    });
  }
  std::uint64_t sum = 0;
  for (std::uint64_t i = 0; i < kSkynetFanout; ++i) {
    children[i].join();
    sum += results[i];
  }
  return sum;
}

struct Chain {
  PooledStacks stacks;
  std::uint64_t n = 0;
  std::atomic<std::uint64_t> links{0};
  FiberEvent done{};
};

void chain_link(Chain& c, std::uint64_t i) {
  c.links.fetch_add(1, std::memory_order_relaxed);
  if (i + 1 == c.n) {
    c.done.set();
    return;
  }
  post(c.stacks, [&c, i] { chain_link(c, i + 1); }).detach();
}

struct PingPongPair {
  bf::unbuffered_channel<std::uint64_t> ping;
  bf::unbuffered_channel<std::uint64_t> pong;
};

}  // namespace

// In each function the shared state is declared before the Pool, so it
// outlives the helper threads and every fiber they still finish.

Row boost_spawn_many(const Params& p) {
  const std::uint64_t n = p.sizes.spawn_many;
  std::atomic<std::uint64_t> count{0};
  FiberEvent done;
  Pool pool(p.workers);
  const PooledStacks stacks = stacks_for(p);
  const Stopwatch sw;
  for (std::uint64_t i = 0; i < n; ++i) {
    post(stacks, [&count, &done, n] {
      if (count.fetch_add(1, std::memory_order_relaxed) + 1 == n) done.set();
    }).detach();
  }
  done.wait();
  const Timing t = sw.stop();
  check(count.load() == n, "spawn_many: {} of {} fibers ran", count.load(), n);
  return make_row("spawn_many", "boost.fiber", p, n, t, "spawns/s");
}

Row boost_yield_many(const Params& p) {
  const std::uint64_t fibers = p.sizes.yield_fibers;
  const std::uint64_t yields = p.sizes.yields;
  std::atomic<std::uint64_t> total{0};
  Pool pool(p.workers);
  const PooledStacks stacks = stacks_for(p);
  std::vector<bf::fiber> fs;
  fs.reserve(fibers);
  const Stopwatch sw;
  for (std::uint64_t f = 0; f < fibers; ++f) {
    fs.push_back(post(stacks, [yields, &total] {
      for (std::uint64_t i = 0; i < yields; ++i) boost::this_fiber::yield();
      total.fetch_add(yields, std::memory_order_relaxed);
    }));
  }
  for (auto& f : fs) f.join();
  const Timing t = sw.stop();
  check(total.load() == fibers * yields, "yield_many: {} of {} yields", total.load(),
        fibers * yields);
  Row r = make_row("yield_many", "boost.fiber", p, fibers * yields, t, "yields/s");
  r.set("fibers", static_cast<double>(fibers));
  return r;
}

Row boost_ping_pong(const Params& p) {
  const std::uint64_t pairs = p.sizes.ping_pong_pairs;
  const std::uint64_t rounds = p.sizes.ping_pong_rounds;
  std::vector<std::unique_ptr<PingPongPair>> chans;
  for (std::uint64_t i = 0; i < pairs; ++i) chans.push_back(std::make_unique<PingPongPair>());
  std::atomic<std::uint64_t> verified{0};
  Pool pool(p.workers);
  const PooledStacks stacks = stacks_for(p);
  std::vector<bf::fiber> fs;
  fs.reserve(2 * pairs);
  const Stopwatch sw;
  for (auto& c : chans) {
    PingPongPair* pp = c.get();
    fs.push_back(post(stacks, [pp, rounds, &verified] {
      std::uint64_t ok = 0;
      for (std::uint64_t r = 0; r < rounds; ++r) {
        if (pp->ping.push(r) != bf::channel_op_status::success) break;
        std::uint64_t back = 0;
        if (pp->pong.pop(back) != bf::channel_op_status::success || back != r) break;
        ++ok;
      }
      verified.fetch_add(ok, std::memory_order_relaxed);
    }));
    fs.push_back(post(stacks, [pp, rounds] {
      for (std::uint64_t r = 0; r < rounds; ++r) {
        std::uint64_t v = 0;
        if (pp->ping.pop(v) != bf::channel_op_status::success) break;
        if (pp->pong.push(v) != bf::channel_op_status::success) break;
      }
    }));
  }
  for (auto& f : fs) f.join();
  const Timing t = sw.stop();
  check(verified.load() == pairs * rounds, "ping_pong: {} of {} round trips verified",
        verified.load(), pairs * rounds);
  Row r = make_row("ping_pong", "boost.fiber", p, pairs * rounds, t, "round trips/s");
  r.set("pairs", static_cast<double>(pairs));
  return r;
}

Row boost_chained_spawn(const Params& p) {
  const std::uint64_t n = p.sizes.chain;
  Chain c{.stacks = stacks_for(p), .n = n};
  Pool pool(p.workers);
  const Stopwatch sw;
  post(c.stacks, [&c] { chain_link(c, 0); }).detach();
  c.done.wait();
  const Timing t = sw.stop();
  check(c.links.load() == n, "chained_spawn: {} of {} links ran", c.links.load(), n);
  return make_row("chained_spawn", "boost.fiber", p, n, t, "spawns/s");
}

Row boost_skynet(const Params& p) {
  const std::uint64_t leaves = p.sizes.skynet_leaves;
  Pool pool(p.workers);
  const PooledStacks stacks = stacks_for(p);
  const Stopwatch sw;
  const std::uint64_t sum = skynet(stacks, 0, leaves);
  const Timing t = sw.stop();
  const std::uint64_t want = leaves * (leaves - 1) / 2;
  check(sum == want, "skynet: sum {} != {}", sum, want);
  Row r = make_row("skynet", "boost.fiber", p, leaves, t, "leaves/s");
  r.set("ms", t.seconds * 1e3);
  return r;
}

Row boost_park_memory(const Params& p) {
  const std::uint64_t n = p.sizes.park_fibers;
  bf::unbuffered_channel<int> ch;
  FiberWaitGroup parking(n);
  FiberWaitGroup finished(n);
  std::atomic<std::uint64_t> closed{0};
  Pool pool(p.workers);
  const PooledStacks stacks = stacks_for(p);
  const std::uint64_t rss_before = rss_bytes();
  const Stopwatch sw;
  for (std::uint64_t i = 0; i < n; ++i) {
    post(stacks, [&] {
      parking.done();
      int v = 0;
      if (ch.pop(v) == bf::channel_op_status::closed)
        closed.fetch_add(1, std::memory_order_relaxed);
      finished.done();
    }).detach();
  }
  parking.wait();
  const Timing t = sw.stop();
  boost::this_fiber::sleep_for(std::chrono::milliseconds(20));
  const std::uint64_t rss_parked = rss_bytes();
  ch.close();
  finished.wait();
  check(closed.load() == n, "park_memory: {} of {} fibers were parked on the channel",
        closed.load(), n);
  const double kib = (static_cast<double>(rss_parked) - static_cast<double>(rss_before)) / 1024.0 /
                     static_cast<double>(n);
  Row r = make_row("park_memory", "boost.fiber", p, n, t, "parks/s");
  r.set("kib_per_fiber", kib);
  r.set("rss_before_mib", static_cast<double>(rss_before) / (1 << 20));
  r.set("rss_parked_mib", static_cast<double>(rss_parked) / (1 << 20));
  return r;
}

Row boost_wake_latency(const Params& p) {
  const std::uint64_t samples = p.sizes.wake_samples;
  const auto gap = std::chrono::microseconds(p.sizes.wake_gap_us);
  using Clock = std::chrono::steady_clock;
  // Buffered channels take a power-of-two capacity of at least 2.
  bf::buffered_channel<Clock::time_point> wake(2);
  bf::buffered_channel<int> ack(2);
  std::vector<double> lat_us;
  lat_us.reserve(samples);
  std::atomic<bool> waker_failed{false};
  std::jthread waker;  // joins on unwinding too
  Pool pool(p.workers);
  const PooledStacks stacks = stacks_for(p);
  const Stopwatch sw;
  bf::fiber sleeper = post(stacks, [&] {
    for (std::uint64_t i = 0; i < samples; ++i) {
      Clock::time_point t0;
      if (wake.pop(t0) != bf::channel_op_status::success) return;
      const auto t1 = Clock::now();
      lat_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      if (ack.push(0) != bf::channel_op_status::success) return;
    }
  });
  // A plain thread (Boost.Fiber gives it its own main fiber on first use).
  waker = std::jthread([&] {
    for (std::uint64_t i = 0; i < samples; ++i) {
      std::this_thread::sleep_for(gap);
      int a = 0;
      if (wake.push(Clock::now()) != bf::channel_op_status::success ||
          ack.pop(a) != bf::channel_op_status::success) {
        waker_failed = true;
        return;
      }
    }
  });
  sleeper.join();
  const Timing t = sw.stop();
  waker.join();
  check(!waker_failed && lat_us.size() == samples, "wake_latency: {} of {} samples taken",
        lat_us.size(), samples);
  Row r = make_row("wake_latency", "boost.fiber", p, samples, t, "wakes/s");
  r.set("p50_us", percentile(lat_us, 0.50));
  r.set("p99_us", percentile(lat_us, 0.99));
  r.set("gap_us", static_cast<double>(p.sizes.wake_gap_us));
  return r;
}

}  // namespace spindle::perf
