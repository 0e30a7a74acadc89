#include "child.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "programs.hpp"

namespace spindle::perf {
namespace {

using Clock = std::chrono::steady_clock;

bool write_all(int fd, std::string_view s) {
  while (!s.empty()) {
    const ssize_t n = ::write(fd, s.data(), s.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    s.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

[[noreturn]] void child_main(int fd, const std::function<Row()>& measure, std::string_view label) {
  // Boost.Fiber's spawn_many and skynet peak at 12-13 GB RSS (a stack per
  // pending fiber): if memory runs out, let the OOM killer pick this process
  // rather than a neighbour. Best effort.
  if (const int adj = ::open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC); adj >= 0) {
    (void)!::write(adj, "1000", 4);
    ::close(adj);
  }
  int code = 0;
  try {
    Row row = measure();
    // Peak RSS of this process: the measurement's memory cost, start-up included.
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    row.set("max_rss_mib", static_cast<double>(ru.ru_maxrss) / 1024.0);
    if (!write_all(fd, serialize(row))) code = 3;
  } catch (const std::exception& e) {
    fmt::print(stderr, "spindle-perf: {}: FAILED: {}\n", label, e.what());
    code = 1;
  } catch (...) {
    fmt::print(stderr, "spindle-perf: {}: FAILED: unknown exception\n", label);
    code = 1;
  }
  std::fflush(stderr);
  ::close(fd);
  // No exit handlers or static destructors: they belong to the parent's image,
  // and Boost.Fiber's thread-local schedulers may still hold finished fibers.
  ::_exit(code);
}

double parse_double(std::string_view v) {
  // from_chars for double is in GCC 12's libstdc++.
  double d = 0;
  std::from_chars(v.data(), v.data() + v.size(), d);
  return d;
}

}  // namespace

std::string serialize(const Row& r) {
  std::string s;
  s += fmt::format("workload\t{}\nimpl\t{}\nworkers\t{}\nn\t{}\nseconds\t{}\nrate\t{}\nunit\t{}\n",
                   r.workload, r.impl, r.workers, r.n, r.seconds, r.rate, r.unit);
  for (const auto& e : r.extras) s += fmt::format("x:{}\t{}\n", e.key, e.value);
  s += "end\t\n";
  return s;
}

std::optional<Row> deserialize(std::string_view text) {
  Row r;
  bool ended = false;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    if (nl == std::string_view::npos) return std::nullopt;
    const std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    const auto tab = line.find('\t');
    if (tab == std::string_view::npos) return std::nullopt;
    const std::string_view key = line.substr(0, tab), value = line.substr(tab + 1);
    if (key == "workload")
      r.workload = value;
    else if (key == "impl")
      r.impl = value;
    else if (key == "workers")
      r.workers = static_cast<std::size_t>(parse_double(value));
    else if (key == "n")
      std::from_chars(value.data(), value.data() + value.size(), r.n);
    else if (key == "seconds")
      r.seconds = parse_double(value);
    else if (key == "rate")
      r.rate = parse_double(value);
    else if (key == "unit")
      r.unit = value;
    else if (key.starts_with("x:"))
      r.set(key.substr(2), parse_double(value));
    else if (key == "end")
      ended = true;
  }
  if (!ended) return std::nullopt;
  return r;
}

ChildResult run_in_child(const std::function<Row()>& measure, std::string_view label,
                         std::chrono::seconds timeout) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return {std::nullopt, fmt::format("pipe2: {}", std::strerror(errno))};
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return {std::nullopt, fmt::format("fork: {}", std::strerror(errno))};
  }
  if (pid == 0) {
    ::close(fds[0]);
    child_main(fds[1], measure, label);
  }
  ::close(fds[1]);

  const bool tty = ::isatty(STDERR_FILENO) == 1;
  const auto start = Clock::now();
  std::string data;
  std::string error;
  long shown = 0;  // whole seconds last shown on the progress line
  for (;;) {
    pollfd pfd{fds[0], POLLIN, 0};
    const int ready = ::poll(&pfd, 1, 250);
    if (ready < 0 && errno != EINTR) {
      error = fmt::format("poll: {}", std::strerror(errno));
      ::kill(pid, SIGKILL);
      break;
    }
    if (ready > 0) {
      char buf[4096];
      const ssize_t n = ::read(fds[0], buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // EOF: the child is done (or died)
      data.append(buf, static_cast<std::size_t>(n));
    }
    const auto elapsed = Clock::now() - start;
    const long secs =
        static_cast<long>(std::chrono::duration_cast<std::chrono::seconds>(elapsed).count());
    if (secs >= 1 && secs != shown) {
      if (tty) {
        fmt::print(stderr, "\r\033[K[spindle-perf] {}: {} s", label, secs);
      } else if (shown == 0) {
        fmt::print(stderr, "[spindle-perf] {}: running for more than a second\n", label);
      }
      std::fflush(stderr);
      shown = secs;
    }
    if (elapsed > timeout) {
      error = fmt::format("no result after {} s (hung?); killed", timeout.count());
      ::kill(pid, SIGKILL);
      break;
    }
  }
  ::close(fds[0]);
  if (shown > 0) {
    const double secs = std::chrono::duration<double>(Clock::now() - start).count();
    if (tty)
      fmt::print(stderr, "\r\033[K");
    else
      fmt::print(stderr, "[spindle-perf] {}: done in {:.1f} s\n", label, secs);
    std::fflush(stderr);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!error.empty()) return {std::nullopt, error};
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return {std::nullopt, describe_status(status)};
  auto row = deserialize(data);
  if (!row) return {std::nullopt, "the child sent no complete result"};
  return {std::move(row), {}};
}

}  // namespace spindle::perf
