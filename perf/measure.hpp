// Measuring helpers shared by the workloads: the stopwatch (wall and process
// CPU time), resident memory, percentiles, and the failure every workload
// raises when its own result check fails.
#pragma once

#include <fcntl.h>
#include <fmt/format.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "row.hpp"
#include "workloads.hpp"

namespace spindle::perf {

// A workload produced a wrong result (a count, a sum, a byte): the run fails.
class PerfError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A failed system call: errno as a std::system_error, `what` naming the call.
[[noreturn]] inline void throw_errno(const std::string& what) {
  throw std::system_error(errno, std::system_category(), what);
}

template <class... A>
void check(bool ok, fmt::format_string<A...> format, A&&... args) {
  if (!ok) throw PerfError(fmt::format(format, std::forward<A>(args)...));
}

struct Timing {
  double seconds = 0;      // wall, steady_clock
  double cpu_seconds = 0;  // CPU time of every thread of the process
};

// The reading of CPU-time clock `clock` (this process's by default; another
// process's from clock_getcpuclockid, all its threads, utime + stime) in seconds.
inline double cpu_clock_seconds(clockid_t clock = CLOCK_PROCESS_CPUTIME_ID) {
  timespec ts{};
  if (::clock_gettime(clock, &ts) != 0) throw_errno("reading a CPU-time clock");
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Not thread-safe; start and stop on the same thread (or fiber).
class Stopwatch {
 public:
  Stopwatch() : wall_(std::chrono::steady_clock::now()), cpu_(cpu_clock_seconds()) {}
  Timing stop() const {
    const auto wall = std::chrono::steady_clock::now() - wall_;
    return {std::chrono::duration<double>(wall).count(), cpu_clock_seconds() - cpu_};
  }

 private:
  std::chrono::steady_clock::time_point wall_;
  double cpu_;
};

// Resident set size of process `pid` (0: this one) from /proc/<pid>/statm. A
// procfs read never waits on a device, so it is harmless even on a worker
// thread.
inline std::uint64_t rss_bytes(pid_t pid = 0) {
  const std::string path =
      pid == 0 ? std::string("/proc/self/statm") : "/proc/" + std::to_string(pid) + "/statm";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::system_error(errno, std::system_category(), "open " + path);
  char buf[256];
  const ssize_t got = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (got <= 0) throw std::system_error(errno, std::system_category(), "read " + path);
  buf[got] = '\0';
  unsigned long long size = 0, resident = 0;
  if (std::sscanf(buf, "%llu %llu", &size, &resident) != 2) throw PerfError("bad " + path);
  return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

// The q-quantile (0 < q <= 1) of `v` by the nearest-rank method; sorts v.
inline double percentile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  auto rank = static_cast<std::size_t>(q * static_cast<double>(v.size()) + 0.999999);
  rank = std::clamp<std::size_t>(rank, 1, v.size());
  return v[rank - 1];
}

inline Row make_row(std::string workload, std::string impl, const Params& p, std::uint64_t n,
                    Timing t, std::string unit) {
  Row r;
  r.workload = std::move(workload);
  r.impl = std::move(impl);
  r.workers = p.workers;
  r.n = n;
  r.seconds = t.seconds;
  r.rate = t.seconds > 0 ? static_cast<double>(n) / t.seconds : 0;
  r.unit = std::move(unit);
  r.set("cpu_s", t.cpu_seconds);
  return r;
}

}  // namespace spindle::perf
