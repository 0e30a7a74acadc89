// The scheduler workloads on spindle. Each runs one Runtime with the harness's
// worker count and stack size, times its region from the root fiber with a
// steady clock, checks its own result, and returns one Row. Runtime start-up
// and shutdown are outside the timed region (as the Boost.Fiber pool's are in
// boost_sched.cpp).

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <spindle/spindle.hpp>
#include <thread>
#include <tuple>
#include <vector>

#include "measure.hpp"
#include "workloads.hpp"

namespace spindle::perf {
namespace {

// The stall detector is off: spawn_many and park_memory spawn from one fiber
// without yielding, which holds a worker past any useful threshold by design.
Config config_for(const Params& p) {
  return Config{.workers = p.workers,
                .stack_size = p.stack_size,
                .stall_threshold = std::chrono::milliseconds(0)};
}

// ---- skynet ---------------------------------------------------------------

constexpr std::uint64_t kSkynetFanout = 10;

// Sums the leaves [num, num + size) through a 10-ary tree of fibers; each
// inner fiber spawns its ten children and joins them.
std::uint64_t skynet(std::uint64_t num, std::uint64_t size) {
  if (size == 1) return num;
  const std::uint64_t sub = size / kSkynetFanout;
  std::array<JoinHandle<std::uint64_t>, kSkynetFanout> children;
  for (std::uint64_t i = 0; i < kSkynetFanout; ++i) {
    children[i] = spindle::spawn([num, sub, i] { return skynet(num + i * sub, sub); });
  }
  std::uint64_t sum = 0;
  for (auto& c : children) sum += c.join().value();
  return sum;
}

// ---- chained_spawn ----------------------------------------------------------

struct Chain {
  // Every link spawns through the root's node: a fiber's own children are
  // aborted when it ends, and each link ends right after spawning the next.
  Context root;
  std::uint64_t n = 0;
  std::atomic<std::uint64_t> links{0};
  Event done{};
};

void chain_link(Chain& c, std::uint64_t i) {
  c.links.fetch_add(1, std::memory_order_relaxed);
  if (i + 1 == c.n) {
    c.done.set();
    return;
  }
  c.root.spawn([&c, i] { chain_link(c, i + 1); }).detach();
}

struct PingPongPair {
  Channel<std::uint64_t> ping{0};
  Channel<std::uint64_t> pong{0};
  Channel<std::uint64_t> never{0};  // select_pingpong's case that is never ready
};

}  // namespace

Row spindle_spawn_many(const Params& p) {
  const std::uint64_t n = p.sizes.spawn_many;
  Runtime rt(config_for(p));
  const auto [t, ran] = rt.run([n] {
    std::atomic<std::uint64_t> count{0};
    Event done;
    const Stopwatch sw;
    for (std::uint64_t i = 0; i < n; ++i) {
      spindle::spawn([&count, &done, n] {
        if (count.fetch_add(1, std::memory_order_relaxed) + 1 == n) done.set();
      }).detach();
    }
    done.wait().value();
    return std::pair{sw.stop(), count.load()};
  });
  check(ran == n, "spawn_many: {} of {} fibers ran", ran, n);
  return make_row("spawn_many", "spindle", p, n, t, "spawns/s");
}

Row spindle_yield_many(const Params& p) {
  const std::uint64_t fibers = p.sizes.yield_fibers;
  const std::uint64_t yields = p.sizes.yields;
  Runtime rt(config_for(p));
  const auto [t, total] = rt.run([fibers, yields] {
    std::vector<JoinHandle<std::uint64_t>> hs;
    hs.reserve(fibers);
    const Stopwatch sw;
    for (std::uint64_t f = 0; f < fibers; ++f) {
      hs.push_back(spindle::spawn([yields] {
        std::uint64_t ok = 0;
        for (std::uint64_t i = 0; i < yields; ++i) ok += this_fiber::yield().has_value() ? 1 : 0;
        return ok;
      }));
    }
    std::uint64_t sum = 0;
    for (auto& h : hs) sum += h.join().value();
    return std::pair{sw.stop(), sum};
  });
  check(total == fibers * yields, "yield_many: {} of {} yields succeeded", total, fibers * yields);
  Row r = make_row("yield_many", "spindle", p, fibers * yields, t, "yields/s");
  r.set("fibers", static_cast<double>(fibers));
  return r;
}

namespace {

// Pairs of fibers bouncing a counter over two unbuffered channels; `recv`
// takes the next value from one of a pair's channels. The root fiber's body:
// returns the time of the exchange and the round trips verified.
template <class Recv>
auto ping_pong(std::uint64_t pairs, std::uint64_t rounds, Recv recv) {
  return [pairs, rounds, recv] {
    std::vector<std::unique_ptr<PingPongPair>> chans;
    for (std::uint64_t i = 0; i < pairs; ++i) chans.push_back(std::make_unique<PingPongPair>());
    std::vector<JoinHandle<std::uint64_t>> hs;
    hs.reserve(2 * pairs);
    const Stopwatch sw;
    for (auto& c : chans) {
      PingPongPair* pp = c.get();
      hs.push_back(spindle::spawn([pp, rounds, recv] {  // pinger: counts verified round trips
        std::uint64_t ok = 0;
        for (std::uint64_t r = 0; r < rounds; ++r) {
          if (!pp->ping.send(r)) break;
          auto back = recv(*pp, pp->pong);
          if (!back || *back != r) break;
          ++ok;
        }
        return ok;
      }));
      hs.push_back(spindle::spawn([pp, rounds, recv] {  // ponger: echoes
        for (std::uint64_t r = 0; r < rounds; ++r) {
          auto v = recv(*pp, pp->ping);
          if (!v || !pp->pong.send(*v)) break;
        }
        return std::uint64_t{0};
      }));
    }
    std::uint64_t sum = 0;
    for (auto& h : hs) sum += h.join().value();
    return std::pair{sw.stop(), sum};
  };
}

Result<std::uint64_t> plain_recv(PingPongPair&, Channel<std::uint64_t>& ch) { return ch.recv(); }

template <class Recv>
Row ping_pong_row(const Params& p, std::string_view name, Recv recv) {
  const std::uint64_t pairs = p.sizes.ping_pong_pairs;
  const std::uint64_t rounds = p.sizes.ping_pong_rounds;
  Runtime rt(config_for(p));
  const auto [t, total] = rt.run(ping_pong(pairs, rounds, recv));
  check(total == pairs * rounds, "{}: {} of {} round trips verified", name, total, pairs * rounds);
  Row r = make_row(std::string(name), "spindle", p, pairs * rounds, t, "round trips/s");
  r.set("pairs", static_cast<double>(pairs));
  return r;
}

// sim_steps: ping_pong as a simulation, or on a real one-worker runtime.
// Each round trip is two fiber turns, the ponger's and the pinger's: the
// simulation counts them (and a few more: the spawns, the joins); the real
// runtime's rate is counted as two per round trip.
Row sim_steps_row(const Params& p, bool simulated) {
  const std::uint64_t pairs = p.sizes.ping_pong_pairs;
  const std::uint64_t rounds = p.sizes.ping_pong_rounds;
  Config c = config_for(p);
  c.workers = 1;
  Timing t;
  std::uint64_t total = 0;
  std::uint64_t steps = 2 * pairs * rounds;
  if (simulated) {
    sim::Runtime rt(sim::Config{.seed = 1, .runtime = c});
    std::tie(t, total) = rt.run(ping_pong(pairs, rounds, plain_recv));
    check(rt.steps() >= steps, "sim_steps: {} steps for {} round trips", rt.steps(), total);
    steps = rt.steps();
  } else {
    Runtime rt(c);
    std::tie(t, total) = rt.run(ping_pong(pairs, rounds, plain_recv));
  }
  check(total == pairs * rounds, "sim_steps: {} of {} round trips verified", total, pairs * rounds);
  Row r = make_row("sim_steps", simulated ? "spindle" : "spindle-1w", p, steps, t, "steps/s");
  r.set("pairs", static_cast<double>(pairs));
  return r;
}

}  // namespace

Row spindle_ping_pong(const Params& p) { return ping_pong_row(p, "ping_pong", plain_recv); }

Row spindle_sim_steps(const Params& p) { return sim_steps_row(p, true); }

Row spindle_one_worker_steps(const Params& p) { return sim_steps_row(p, false); }

Row spindle_select_pingpong(const Params& p) {
  return ping_pong_row(p, "select_pingpong",
                       [](PingPongPair& pair, Channel<std::uint64_t>& ch) -> Result<std::uint64_t> {
                         RecvCase<std::uint64_t> from(ch), never(pair.never);
                         if (auto i = spindle::select(from, never); !i) return failure(i.error());
                         return from.result();
                       });
}

Row spindle_chained_spawn(const Params& p) {
  const std::uint64_t n = p.sizes.chain;
  Runtime rt(config_for(p));
  const auto [t, links] = rt.run([n] {
    Chain c{.root = this_fiber::context(), .n = n};
    const Stopwatch sw;
    c.root.spawn([&c] { chain_link(c, 0); }).detach();
    c.done.wait().value();
    return std::pair{sw.stop(), c.links.load()};
  });
  check(links == n, "chained_spawn: {} of {} links ran", links, n);
  return make_row("chained_spawn", "spindle", p, n, t, "spawns/s");
}

Row spindle_skynet(const Params& p) {
  const std::uint64_t leaves = p.sizes.skynet_leaves;
  Runtime rt(config_for(p));
  const auto [t, sum] = rt.run([leaves] {
    const Stopwatch sw;
    const std::uint64_t s = skynet(0, leaves);
    return std::pair{sw.stop(), s};
  });
  const std::uint64_t want = leaves * (leaves - 1) / 2;
  check(sum == want, "skynet: sum {} != {}", sum, want);
  Row r = make_row("skynet", "spindle", p, leaves, t, "leaves/s");
  r.set("ms", t.seconds * 1e3);
  return r;
}

Row spindle_park_memory(const Params& p) {
  const std::uint64_t n = p.sizes.park_fibers;
  Runtime rt(config_for(p));
  struct Out {
    Timing t;
    std::uint64_t rss_before = 0, rss_parked = 0, closed = 0;
  };
  const Out out = rt.run([n] {
    Out o;
    Channel<int> ch(0);
    WaitGroup parking(static_cast<std::int64_t>(n));
    WaitGroup finished(static_cast<std::int64_t>(n));
    std::atomic<std::uint64_t> closed{0};
    o.rss_before = rss_bytes();
    const Stopwatch sw;
    for (std::uint64_t i = 0; i < n; ++i) {
      spindle::spawn([&] {
        parking.done();
        // Parks until close(): the only way out is errc::closed.
        if (auto v = ch.recv(); !v && v.error() == errc::closed) {
          closed.fetch_add(1, std::memory_order_relaxed);
        }
        finished.done();
      }).detach();
    }
    parking.wait().value();
    o.t = sw.stop();
    // Each fiber goes from parking.done() straight into recv() without a
    // suspension point in between; this sleep lets the stragglers park.
    this_fiber::sleep_for(std::chrono::milliseconds(20)).value();
    o.rss_parked = rss_bytes();
    ch.close();
    finished.wait().value();
    o.closed = closed.load();
    return o;
  });
  check(out.closed == n, "park_memory: {} of {} fibers were parked on the channel", out.closed, n);
  const double kib = (static_cast<double>(out.rss_parked) - static_cast<double>(out.rss_before)) /
                     1024.0 / static_cast<double>(n);
  Row r = make_row("park_memory", "spindle", p, n, out.t, "parks/s");
  r.set("kib_per_fiber", kib);
  r.set("rss_before_mib", static_cast<double>(out.rss_before) / (1 << 20));
  r.set("rss_parked_mib", static_cast<double>(out.rss_parked) / (1 << 20));
  return r;
}

Row spindle_wake_latency(const Params& p) {
  const std::uint64_t samples = p.sizes.wake_samples;
  const auto gap = std::chrono::microseconds(p.sizes.wake_gap_us);
  using Clock = std::chrono::steady_clock;
  Channel<Clock::time_point> wake(1);
  Channel<int> ack(1);
  std::vector<double> lat_us;
  lat_us.reserve(samples);
  std::atomic<bool> waker_failed{false};
  std::jthread waker;  // joins on unwinding too
  Runtime rt(config_for(p));
  const Timing t = rt.run([&] {
    const Stopwatch sw;
    auto sleeper = spindle::spawn([&] {
      for (std::uint64_t i = 0; i < samples; ++i) {
        auto t0 = wake.recv();
        const auto t1 = Clock::now();
        if (!t0) return;
        lat_us.push_back(std::chrono::duration<double, std::micro>(t1 - *t0).count());
        if (!ack.send(0)) return;
      }
    });
    // A plain thread: sleeps so both workers go idle, stamps t0, wakes the
    // parked fiber, and waits for its ack before the next sample.
    waker = std::jthread([&] {
      for (std::uint64_t i = 0; i < samples; ++i) {
        std::this_thread::sleep_for(gap);
        if (!wake.send(Clock::now()) || !ack.recv()) {
          waker_failed = true;
          return;
        }
      }
    });
    sleeper.join().value();
    return sw.stop();
  });
  waker.join();
  check(!waker_failed && lat_us.size() == samples, "wake_latency: {} of {} samples taken",
        lat_us.size(), samples);
  Row r = make_row("wake_latency", "spindle", p, samples, t, "wakes/s");
  r.set("p50_us", percentile(lat_us, 0.50));
  r.set("p99_us", percentile(lat_us, 0.99));
  r.set("gap_us", static_cast<double>(p.sizes.wake_gap_us));
  return r;
}

}  // namespace spindle::perf
