// Row: one measured result, one workload run by one implementation, as the
// table prints it and --json writes it.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace spindle::perf {

// A workload-specific number beside the common keys (kib_per_fiber, p50_us,
// fibers, depth, ...). Written to JSON under its key.
struct Extra {
  std::string key;
  double value = 0;
};

// Plain value; not thread-safe.
struct Row {
  std::string workload;  // "spawn_many", ..., "nop_1", "nop_64", "pipe_pingpong"
  std::string impl;      // "spindle", "boost.fiber" or "raw-uring"
  std::size_t workers = 0;
  std::uint64_t n = 0;  // the operations counted by `rate`
  double seconds = 0;   // wall time of the measured region (steady_clock)
  double rate = 0;      // n / seconds
  std::string unit;     // what `rate` counts per second, e.g. "spawns/s"
  std::vector<Extra> extras;

  void set(std::string_view key, double value) {
    for (auto& e : extras) {
      if (e.key == key) {
        e.value = value;
        return;
      }
    }
    extras.push_back({std::string(key), value});
  }
  // NaN when absent.
  double extra(std::string_view key) const {
    for (const auto& e : extras) {
      if (e.key == key) return e.value;
    }
    return std::nan("");
  }
};

}  // namespace spindle::perf
