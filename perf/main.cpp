// spindle-perf: spindle's workloads side by side with their baselines
// (Boost.Fiber for the scheduler, raw liburing loops for I/O, fio for file
// reads, cp for a file copy, nginx for static files over HTTP and HTTPS) in one run,
// with the same worker count and sizes. One table row per workload:
// spindle, the baseline, their ratio, and at 2 workers the target
// (perf/README.md, "Targets").
// --json writes one JSON object per line for each (workload, implementation).
//
// Every measurement runs in a child process of its own (child.hpp says why);
// with --repeat the runs of spindle and of its baseline alternate, so slow
// phases of a noisy machine hit both, and the median run is reported.

#include <fmt/format.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "child.hpp"
#include "row.hpp"
#include "workloads.hpp"

namespace spindle::perf {
namespace {

enum class Better { kHigher, kLower };

// The number a row is judged by: the rate, or one of the row's extras.
struct Headline {
  std::string_view extra;  // empty: Row::rate
  std::string_view unit;   // shown after the value ("" for rates: Row::unit)
  Better better = Better::kHigher;

  double of(const Row& r) const { return extra.empty() ? r.rate : r.extra(extra); }
};

// A target (perf/README.md, "Targets"), set for 2 workers on the 2-core machine.
struct Target {
  enum class On { kHeadline, kRatio } on = On::kHeadline;
  double value = 0;
};

using Measure = std::function<Row(const Params&)>;

// One table row: spindle and its baseline on the same workload.
struct Variant {
  std::string_view name;
  // "boost.fiber", "raw-uring", "fio", "cp", "nginx", or a spindle row ("ping_pong")
  std::string_view baseline;
  Measure run_spindle;
  Measure run_baseline;
  Headline headline;
  std::optional<Target> target;
  // Why the baseline cannot run on this machine ("" when it can): it is then
  // skipped with a note, not failed.
  std::function<std::string()> baseline_missing = {};
  // The same for spindle's side, where it is a program that may not be built
  // or needs a load generator that may not be installed.
  std::function<std::string()> spindle_missing = {};
};

struct Workload {
  std::string_view name;
  std::vector<Variant> variants;
  // Runs in this (the parent) process before the workload's first
  // measurement; it may fill in Params for them (a file to read). What it
  // returns is released, undoing the preparation, after the last one.
  std::function<std::shared_ptr<void>(Params&)> prepare = {};
};

std::vector<Workload> workloads() {
  const Headline rate{};
  const Headline skynet_ms{"ms", "ms", Better::kLower};
  const Headline kib{"kib_per_fiber", "KiB/fiber", Better::kLower};
  const Headline p50{"p50_us", "us", Better::kLower};
  const Headline cpu_per_req{"server_cpu_s_per_req", "us", Better::kLower};
  auto at_least = [](double v) { return Target{Target::On::kHeadline, v}; };
  auto echo = [&](std::string_view name, std::size_t connections) {
    return Variant{name, "raw-uring",
                   [connections](const Params& p) {
                     return spindle_echo(p, connections, IoBackendKind::kIoUring);
                   },
                   [connections](const Params& p) { return raw_echo(p, connections); }, cpu_per_req,
                   // CPU per request at most 0.9 times the raw loop's.
                   Target{Target::On::kRatio, 1 / 0.9}};
  };
  auto echo_epoll = [&](std::string_view name, std::size_t connections) {
    return Variant{name, "raw-epoll",
                   [connections](const Params& p) {
                     return spindle_echo(p, connections, IoBackendKind::kEpoll);
                   },
                   [connections](const Params& p) { return raw_epoll_echo(p, connections); },
                   cpu_per_req,
                   // CPU per request within 1.1 times the raw epoll loop's.
                   Target{Target::On::kRatio, 1 / 1.1}};
  };
  auto http = [&](HttpLoad load) {
    return Variant{load.name, "nginx", [load](const Params& p) { return spindle_http(p, load); },
                   [load](const Params& p) { return nginx_http(p, load); }, cpu_per_req,
                   // Server CPU per request no more than nginx's.
                   Target{Target::On::kRatio, 1.0}, [load] { return nginx_missing(load); },
                   [load] { return spindle_http_missing(load); }};
  };
  return {
      {"spawn_many",
       {{"spawn_many", "boost.fiber", spindle_spawn_many, boost_spawn_many, rate,
         at_least(5.5e6)}}},
      {"yield_many",
       {{"yield_many", "boost.fiber", spindle_yield_many, boost_yield_many, rate, at_least(68e6)}}},
      {"ping_pong",
       {{"ping_pong", "boost.fiber", spindle_ping_pong, boost_ping_pong, rate, at_least(19e6)}}},
      // Against spindle's own ping_pong: the cost of select over a plain receive.
      {"select_pingpong",
       {{"select_pingpong", "ping_pong", spindle_select_pingpong, spindle_ping_pong, rate,
         Target{Target::On::kRatio, 0.5}}}},
      // A simulation's cost: the same exchange on one real worker.
      {"sim_steps",
       {{"sim_steps", "spindle-1w", spindle_sim_steps, spindle_one_worker_steps, rate,
         at_least(1e6)}}},
      {"chained_spawn",
       {{"chained_spawn", "boost.fiber", spindle_chained_spawn, boost_chained_spawn, rate,
         at_least(20e6)}}},
      {"skynet",
       {{"skynet", "boost.fiber", spindle_skynet, boost_skynet, skynet_ms,
         Target{Target::On::kHeadline, 245}}}},
      {"park_memory",
       {{"park_memory", "boost.fiber", spindle_park_memory, boost_park_memory, kib,
         Target{Target::On::kHeadline, 4.5}}}},
      {"wake_latency",
       {{"wake_latency", "boost.fiber", spindle_wake_latency, boost_wake_latency, p50,
         Target{Target::On::kHeadline, 10}}}},
      {"nop",
       {{"nop_1", "raw-uring", [](const Params& p) { return spindle_nop(p, 1); },
         [](const Params& p) { return raw_nop(p, 1); }, rate, Target{Target::On::kRatio, 0.95}},
        {"nop_64", "raw-uring", [](const Params& p) { return spindle_nop(p, 64); },
         [](const Params& p) { return raw_nop(p, 64); }, rate, Target{Target::On::kRatio, 0.80}}}},
      {"pipe_pingpong",
       {{"pipe_pingpong", "raw-uring", spindle_pipe_pingpong, raw_pipe_pingpong, rate,
         std::nullopt}}},
      {"echo", {echo("echo_100", 100), echo("echo_1000", 1'000), echo("echo_10000", 10'000)}},
      {"echo_epoll", {echo_epoll("echo_epoll_100", 100), echo_epoll("echo_epoll_1000", 1'000)}},
      {"file_randread",
       {{"file_randread", "fio", spindle_file_randread, fio_file_randread, rate,
         Target{Target::On::kRatio, 0.90}, fio_missing}},
       prepare_randread},
      {"file_copy",
       {{"file_copy", "cp", spindle_file_copy, cp_file_copy, rate, Target{Target::On::kRatio, 0.90},
         cp_missing}},
       prepare_file_copy},
      {"http_static", {http({})}, prepare_http_static},
      {"https",
       {http({.name = "https", .tls = true}),
        http({.name = "https_handshake", .tls = true, .close = true})},
       prepare_https},
  };
}

// ---- formatting ---------------------------------------------------------------

std::string si(double v) {
  const double a = std::fabs(v);
  if (a >= 1e9) return fmt::format("{:.2f}G", v / 1e9);
  if (a >= 1e6) return fmt::format("{:.2f}M", v / 1e6);
  if (a >= 1e3) return fmt::format("{:.1f}k", v / 1e3);
  return fmt::format("{:.1f}", v);
}

std::string show(const Headline& h, const Row& r) {
  if (h.extra.empty()) return fmt::format("{} {}", si(r.rate), r.unit);
  if (h.extra == "p50_us") {
    return fmt::format("p50 {:.1f} p99 {:.1f} us", r.extra("p50_us"), r.extra("p99_us"));
  }
  if (h.extra == "kib_per_fiber") return fmt::format("{:.2f} {}", h.of(r), h.unit);
  if (h.extra == "server_cpu_s_per_req") {
    return fmt::format("{:.2f} us/req, {}/s", h.of(r) * 1e6, si(r.rate));
  }
  return fmt::format("{:.1f} {}", h.of(r), h.unit);
}

// > 1 when spindle does better, whichever way "better" points.
double ratio(const Headline& h, const Row& s, const Row& b) {
  const double sv = h.of(s), bv = h.of(b);
  return h.better == Better::kHigher ? sv / bv : bv / sv;
}

std::string show_target(const Variant& v, const Row& s, double r) {
  if (!v.target) return "-";
  const Target& t = *v.target;
  if (t.on == Target::On::kRatio) {
    const bool ok = r >= t.value;
    return fmt::format(">= {:.0f}% of {}: {:.0f}% {}", t.value * 100, v.baseline, r * 100,
                       ok ? "ok" : "MISS");
  }
  const double got = v.headline.of(s);
  const bool higher = v.headline.better == Better::kHigher;
  const bool ok = higher ? got >= t.value : got <= t.value;
  const std::string want = higher ? fmt::format(">= {}", si(t.value))
                                  : fmt::format("<= {:g} {}", t.value, v.headline.unit);
  if (ok) return want + ": ok";
  // How far off, as a share of the target.
  const double off = higher ? (t.value - got) / t.value : (got - t.value) / t.value;
  return fmt::format("{}: MISS by {:.0f}%", want, off * 100);
}

// ---- median -----------------------------------------------------------------

// The median run by the headline (for an even count, the worse of the two
// middle ones), with the spread of the runs as an extra.
Row median(std::vector<Row> runs, const Headline& h) {
  std::sort(runs.begin(), runs.end(), [&](const Row& a, const Row& b) {
    return h.better == Better::kHigher ? h.of(a) > h.of(b) : h.of(a) < h.of(b);
  });
  Row m = runs[runs.size() / 2];
  m.set("repeat", static_cast<double>(runs.size()));
  if (runs.size() > 1) {
    const double spread = std::fabs(h.of(runs.front()) - h.of(runs.back())) / h.of(m);
    m.set("spread_pct", spread * 100);
  }
  return m;
}

// ---- JSON ---------------------------------------------------------------------

// One object, one line, its keys in the row's order (a number that is not
// finite is null).
std::string to_json(const Row& r) {
  nlohmann::ordered_json j = {
      {"workload", r.workload}, {"impl", r.impl}, {"workers", r.workers}, {"n", r.n},
      {"seconds", r.seconds},   {"rate", r.rate}, {"unit", r.unit}};
  for (const auto& e : r.extras) j[e.key] = e.value;
  return j.dump();
}

// ---- the run ------------------------------------------------------------------

// The load average, and the share of the last 10 s in which some runnable
// thread waited for a CPU (/proc/pressure/cpu): how noisy the machine is.
std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  std::string out = fmt::format("{} {} {}", a, b, c);
  std::ifstream psi("/proc/pressure/cpu");
  std::string some, avg10;
  if (psi >> some >> avg10 && avg10.starts_with("avg10=")) {
    out += fmt::format(", cpu pressure {}%", avg10.substr(6));
  }
  return out;
}

std::string kernel_release() {
  utsname u{};
  ::uname(&u);
  return u.release;
}

struct Options {
  std::vector<std::string> names;
  std::size_t workers = 2;
  std::size_t repeat = 1;
  bool quick = false;
  std::string json;
  std::size_t stack_kib = 256;
  unsigned timeout_s = 300;
  bool run_spindle = true;  // --impl: measure one side only (for profiling)
  bool run_baseline = true;
  bool verbose = false;  // every run's result on stderr
};

bool selected(const Options& o, const Workload& w, const Variant& v) {
  if (o.names.empty()) return true;
  return std::any_of(o.names.begin(), o.names.end(),
                     [&](const std::string& n) { return n == w.name || n == v.name; });
}

int run(const Options& o) {
  Params params;
  params.workers = o.workers;
  params.stack_size = o.stack_kib * 1024;
  if (o.quick) params.sizes = Sizes::quick();

  fmt::print("spindle-perf: {} worker{}, {} KiB stacks, {}{}; {} CPUs, Linux {}, load {}\n",
             o.workers, o.workers == 1 ? "" : "s", o.stack_kib,
             o.repeat == 1 ? std::string("1 run") : fmt::format("median of {} runs", o.repeat),
             o.quick ? ", quick sizes" : "", std::thread::hardware_concurrency(), kernel_release(),
             load_average());
  // The targets are set for the full sizes at 2 workers.
  const bool targets = o.workers == 2 && !o.quick;
  fmt::print("{:<14} {:>9}  {:<26} {:<12} {:<26} {:>7}  {}\n", "workload", "n", "spindle",
             "baseline", "", "ratio",
             targets ? "target (perf/README.md)" : "target (full sizes, 2 workers only)");
  std::fflush(stdout);

  std::vector<Row> rows;
  int failures = 0;
  for (const Workload& w : workloads()) {
    if (std::none_of(w.variants.begin(), w.variants.end(),
                     [&](const Variant& v) { return selected(o, w, v); })) {
      continue;
    }
    Params wparams = params;
    std::shared_ptr<void> prepared;  // released after the workload's last measurement
    std::string prepare_error;
    if (w.prepare) {
      try {
        prepared = w.prepare(wparams);
      } catch (const std::exception& e) {
        prepare_error = fmt::format("{}: preparing: {}", w.name, e.what());
      }
    }
    for (const Variant& v : w.variants) {
      if (!selected(o, w, v)) continue;
      auto runnable = [&](bool wanted, const std::function<std::string()>& missing,
                          std::string_view side) {
        const std::string why = wanted && missing ? missing() : std::string();
        if (!why.empty()) fmt::print("{:<14} {} skipped: {}\n", v.name, side, why);
        return wanted && why.empty();
      };
      const bool run_spindle = runnable(o.run_spindle, v.spindle_missing, "spindle");
      const bool run_baseline =
          runnable(o.run_baseline, v.baseline_missing, fmt::format("{} baseline", v.baseline));
      std::vector<Row> runs_s, runs_b;
      std::string error = prepare_error;
      for (std::size_t rep = 1; rep <= o.repeat && error.empty(); ++rep) {
        const std::string suffix =
            o.repeat > 1 ? fmt::format(" run {}/{}", rep, o.repeat) : std::string();
        for (bool is_spindle : {true, false}) {
          if (is_spindle ? !run_spindle : !run_baseline) continue;
          const std::string impl = is_spindle ? "spindle" : std::string(v.baseline);
          const std::string label = fmt::format("{} {}{}", v.name, impl, suffix);
          const Measure& m = is_spindle ? v.run_spindle : v.run_baseline;
          ChildResult res =
              run_in_child([&] { return m(wparams); }, label, std::chrono::seconds(o.timeout_s));
          if (!res.row) {
            error = fmt::format("{}: {}", label, res.error);
            break;
          }
          // The row is named as in the table: one measurement may serve
          // several rows (echo on either backend; spindle's ping_pong as
          // select_pingpong's baseline).
          res.row->workload = v.name;
          res.row->impl = impl;
          if (o.verbose) {
            fmt::print(stderr, "[spindle-perf] {}: {} in {:.3f} s, cpu {:.3f} s\n", label,
                       show(v.headline, *res.row), res.row->seconds, res.row->extra("cpu_s"));
          }
          (is_spindle ? runs_s : runs_b).push_back(std::move(*res.row));
        }
      }
      if (!error.empty()) {
        ++failures;
        fmt::print("{:<14} FAILED: {}\n", v.name, error);
        fmt::print(stderr, "spindle-perf: FAILED: {}\n", error);
        std::fflush(stdout);
        continue;
      }
      auto cell = [&](const std::vector<Row>& runs) {
        if (runs.empty()) return std::string("-");
        const Row m = median(runs, v.headline);
        const double sp = m.extra("spread_pct");
        return std::isnan(sp) ? show(v.headline, m)
                              : fmt::format("{} ±{:.0f}%", show(v.headline, m), sp);
      };
      std::string ratio_cell = "-", target_cell = "-";
      std::uint64_t n = 0;
      if (!runs_s.empty()) {
        const Row s = median(runs_s, v.headline);
        n = s.n;
        rows.push_back(s);
        double r = std::nan("");
        if (!runs_b.empty()) {
          r = ratio(v.headline, s, median(runs_b, v.headline));
          ratio_cell = fmt::format("{:.2f}x", r);
        }
        if (targets && (v.target && (v.target->on == Target::On::kHeadline || !std::isnan(r)))) {
          target_cell = show_target(v, s, r);
        }
      }
      if (!runs_b.empty()) {
        rows.push_back(median(runs_b, v.headline));
        n = rows.back().n;
      }
      fmt::print("{:<14} {:>9}  {:<26} {:<12} {:<26} {:>7}  {}\n", v.name, n, cell(runs_s),
                 v.baseline, cell(runs_b), ratio_cell, target_cell);
      std::fflush(stdout);
    }
  }
  fmt::print(
      "ratio > 1: spindle ahead (rates: spindle/baseline; ms, KiB, us: baseline/spindle). "
      "load at end {}\n",
      load_average());

  if (!o.json.empty()) {
    std::ofstream out(o.json, std::ios::trunc);
    for (const Row& row : rows) out << to_json(row) << '\n';
    out.flush();
    if (!out) {
      fmt::print(stderr, "spindle-perf: cannot write {}\n", o.json);
      return 1;
    }
  }
  if (failures > 0) {
    fmt::print(stderr, "spindle-perf: {} workload{} FAILED\n", failures, failures == 1 ? "" : "s");
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace spindle::perf

int main(int argc, char** argv) {
  using namespace spindle::perf;
  Options o;
  std::vector<std::string> names;
  for (const auto& w : workloads()) {
    names.emplace_back(w.name);
    for (const auto& v : w.variants) {
      if (v.name != w.name) names.emplace_back(v.name);
    }
  }
  CLI::App app{
      "spindle-perf: spindle's scheduler and I/O workloads side by side with Boost.Fiber and a "
      "raw liburing loop, in one run, with the same worker count and sizes. Not a test: timing "
      "is reported, never asserted."};
  app.add_option("workload", o.names, "workloads to run (default: all)")
      ->check(CLI::IsMember(names));
  app.add_option("-w,--workers", o.workers, "worker threads for spindle and for Boost.Fiber")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("-r,--repeat", o.repeat, "runs per implementation; the median is reported")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_flag("-q,--quick", o.quick, "small sizes, for smoke runs");
  app.add_option("--json", o.json, "write one JSON object per row (JSON Lines) to FILE");
  app.add_option("--stack-size", o.stack_kib, "fiber stack size in KiB, for both runtimes")
      ->check(CLI::Range(16, 1024 * 1024))
      ->capture_default_str();
  app.add_option("--timeout", o.timeout_s, "seconds one measurement may take before it is killed")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app.add_flag("-v,--verbose", o.verbose, "print every run's result on stderr");
  std::string impl = "both";
  app.add_option("--impl", impl, "measure only one side, e.g. under a profiler")
      ->check(CLI::IsMember({"both", "spindle", "baseline"}))
      ->capture_default_str();
  bool list = false;
  app.add_flag("--list", list, "list the workloads and exit");
  CLI11_PARSE(app, argc, argv);
  if (list) {
    for (const auto& n : names) fmt::print("{}\n", n);
    return 0;
  }
  o.run_spindle = impl != "baseline";
  o.run_baseline = impl != "spindle";
  try {
    return run(o);
  } catch (const std::exception& e) {
    fmt::print(stderr, "spindle-perf: {}\n", e.what());
    return 1;
  }
}
