#include "programs.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "measure.hpp"

namespace spindle::perf {
namespace {

// In the forked child, before exec: only async-signal-safe calls.
[[noreturn]] void fail_in_child(const char* what) {
  const char prefix[] = "spindle-perf: starting a program: ";
  (void)!::write(STDERR_FILENO, prefix, sizeof prefix - 1);
  (void)!::write(STDERR_FILENO, what, std::strlen(what));
  (void)!::write(STDERR_FILENO, "\n", 1);
  ::_exit(126);
}

[[noreturn]] void exec_in_child(pid_t parent, const char* exe, char* const* argv, char* const* envp,
                                int out, const ProgramOptions& o) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(126);  // the parent is already gone
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null < 0) fail_in_child("opening /dev/null");
  const int to = out >= 0 ? out : null;
  if (::dup2(null, STDIN_FILENO) < 0 || ::dup2(to, STDOUT_FILENO) < 0 ||
      (o.merge_stderr && ::dup2(to, STDERR_FILENO) < 0)) {
    fail_in_child("redirecting its standard streams");
  }
  if (o.cpu >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(o.cpu, &set);
    if (::sched_setaffinity(0, sizeof set, &set) != 0) fail_in_child("pinning it to its CPU");
  }
  ::execve(exe, argv, envp);
  ::_exit(127);
}

// This process's environment with `set` ("NAME=value") over it.
std::vector<std::string> environment(const std::vector<std::string>& set) {
  auto name = [](std::string_view entry) { return entry.substr(0, entry.find('=')); };
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry = *e;
    const bool replaced = std::any_of(set.begin(), set.end(),
                                      [&](const std::string& s) { return name(s) == name(entry); });
    if (!replaced) env.emplace_back(entry);
  }
  env.insert(env.end(), set.begin(), set.end());
  return env;
}

// Appends the C strings of `strings` to `out`, then the null pointer that
// ends an exec's list.
void append_c_strings(std::vector<char*>& out, const std::vector<std::string>& strings) {
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
}

}  // namespace

std::string find_on_path(std::string_view name) {
  const char* env = std::getenv("PATH");
  std::string_view path = env != nullptr ? env : "/bin:/usr/bin";
  for (;;) {
    const auto colon = path.find(':');
    const std::string_view dir = path.substr(0, colon);
    const std::string file = fmt::format("{}/{}", dir.empty() ? "." : dir, name);
    struct stat st{};
    if (::stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(file.c_str(), X_OK) == 0)
      return file;
    if (colon == std::string_view::npos) return "";
    path.remove_prefix(colon + 1);
  }
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return fmt::format("killed by signal {} ({})", sig, ::strsignal(sig));
  }
  return fmt::format("ended with wait status {:#x}", status);
}

bool ProgramExit::ok() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

Program::Program(const std::string& exe, const std::vector<std::string>& args,
                 const ProgramOptions& options) {
  // Built before the fork: the child only execs.
  std::vector<char*> argv{const_cast<char*>(exe.c_str())};
  append_c_strings(argv, args);
  const std::vector<std::string> env = environment(options.env);
  std::vector<char*> envp;
  append_c_strings(envp, env);
  UniqueFd out_w;
  if (options.capture_stdout) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw_errno("pipe2");
    out_.reset(fds[0]);
    out_w.reset(fds[1]);
  }
  const pid_t parent = ::getpid();
  std::fflush(stdout);
  std::fflush(stderr);
  pid_ = ::fork();
  if (pid_ < 0) throw_errno(fmt::format("fork for {}", exe));
  if (pid_ == 0) exec_in_child(parent, exe.c_str(), argv.data(), envp.data(), out_w.get(), options);
}

void Program::reaped(int status, const rusage& usage) {
  auto seconds = [](const timeval& tv) {
    return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
  };
  pid_ = -1;
  exit_.status = status;
  exit_.cpu_s = seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

bool Program::running() {
  if (pid_ <= 0) return false;
  int status = 0;
  rusage ru{};
  pid_t got;
  while ((got = ::wait4(pid_, &status, WNOHANG, &ru)) < 0 && errno == EINTR) {
  }
  if (got != pid_) return true;
  reaped(status, ru);
  return false;
}

void Program::signal(int sig) const {
  if (pid_ > 0) ::kill(pid_, sig);
}

ProgramExit Program::wait() {
  if (out_) {
    char buf[4096];
    for (;;) {
      const ssize_t n = ::read(out_.get(), buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      exit_.out.append(buf, static_cast<std::size_t>(n));
    }
    out_.reset();
  }
  if (pid_ > 0) {
    int status = 0;
    rusage ru{};
    while (::wait4(pid_, &status, 0, &ru) < 0 && errno == EINTR) {
    }
    reaped(status, ru);
  }
  return exit_;
}

void Program::kill() noexcept {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  rusage ru{};
  while (::wait4(pid_, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  reaped(status, ru);
}

std::string run_capture(const std::string& exe, const std::vector<std::string>& args,
                        const ProgramOptions& options) {
  Program program(exe, args, options);
  const ProgramExit e = program.wait();
  check(e.ok(), "{} {}: {}", exe, describe_status(e.status), e.out.substr(0, 2000));
  return e.out;
}

}  // namespace spindle::perf
