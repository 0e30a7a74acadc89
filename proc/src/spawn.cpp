// spawn: posix_spawn(3) and pidfd_open(2).
//
// glibc's posix_spawn clones with CLONE_VM | CLONE_VFORK onto a stack of its
// own and runs only the file actions and exec in the child: no allocation,
// no lock, so it is safe however many threads this process runs (a fork
// would copy their held locks into the child). Everything it needs (argv,
// the environment, the file actions) is built before. The child's pid is
// then turned into a pidfd; the pid cannot be reused in between, since
// only a wait frees it, and SIGCHLD is checked not to be ignored (an
// ignored SIGCHLD makes the kernel reap children by itself).
//
// Rejected: clone3(CLONE_PIDFD | CLONE_VFORK | CLONE_VM) by hand, which
// gives the pidfd without the extra system call but means writing the
// child side (a stack, the signal reset, the file actions) that glibc
// already gets right; and fork(), unsafe with threads.
//
// Descriptors: the child's pipe ends are made close-on-exec and above 2
// (so that the dup2 onto 0, 1 or 2 always clears the flag), and the last
// file action closes every descriptor from 3 up, so the child gets exactly
// its three standard streams whatever else this process has open.

#include "spindle/proc/spawn.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <stdexcept>
#include <string_view>

#include "pidfd.hpp"
#include "spawn_error.hpp"
#include "spindle/sched/runtime.hpp"

namespace spindle::process {
namespace {

void validate(const std::vector<std::string>& argv, const Options& options) {
  auto no_nul = [](std::string_view s, std::string_view setting) {
    if (s.find('\0') != std::string_view::npos) {
      throw std::invalid_argument("spindle::process::spawn: " + std::string(setting) +
                                  " contains a NUL byte");
    }
  };
  if (argv.empty() || argv[0].empty()) {
    throw std::invalid_argument("spindle::process::spawn: argv has no program (argv[0])");
  }
  for (std::size_t i = 0; i < argv.size(); ++i) no_nul(argv[i], "argv[" + std::to_string(i) + "]");
  for (const std::string& entry : options.env) {
    no_nul(entry, "Options::env entry '" + entry + "'");
    const std::size_t eq = entry.find('=');
    if (eq == 0 || eq == std::string::npos) {
      throw std::invalid_argument("spindle::process::spawn: Options::env entry '" + entry +
                                  "' is not NAME=VALUE");
    }
  }
  no_nul(options.cwd, "Options::cwd");
}

void require_waitable_children() {
  struct sigaction sa{};
  if (::sigaction(SIGCHLD, nullptr, &sa) == 0 &&
      (sa.sa_handler == SIG_IGN || (sa.sa_flags & SA_NOCLDWAIT) != 0)) {
    throw std::logic_error(
        "spindle::process::spawn: SIGCHLD is ignored in this process (SIG_IGN or SA_NOCLDWAIT), "
        "so the kernel reaps children itself and none could be waited for; restore its default "
        "action");
  }
}

// The child's environment (Options::inherit_env, Options::env).
std::vector<std::string> environment(const Options& options) {
  std::vector<std::string> env;
  if (options.inherit_env) {
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
  }
  for (const std::string& entry : options.env) {
    const std::string_view name = std::string_view(entry).substr(0, entry.find('=') + 1);
    std::erase_if(env, [&](const std::string& e) { return e.starts_with(name); });
    env.push_back(entry);
  }
  return env;
}

// argv-style: pointers into `strings`, then a null.
std::vector<char*> pointers(const std::vector<std::string>& strings) {
  std::vector<char*> p;
  p.reserve(strings.size() + 1);
  for (const std::string& s : strings) p.push_back(const_cast<char*>(s.c_str()));
  p.push_back(nullptr);
  return p;
}

// posix_spawn's two argument objects, destroyed with their owner.
struct SpawnArgs {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  SpawnArgs() {
    ::posix_spawn_file_actions_init(&actions);
    ::posix_spawnattr_init(&attr);
  }
  ~SpawnArgs() {
    ::posix_spawn_file_actions_destroy(&actions);
    ::posix_spawnattr_destroy(&attr);
  }
  SpawnArgs(const SpawnArgs&) = delete;
  SpawnArgs& operator=(const SpawnArgs&) = delete;
};

// One standard stream of the child: the parent's end of its pipe (if any),
// and the child's end, which the file actions put in place.
struct Stream {
  UniqueFd parent;
  UniqueFd child;
};

// A pipe for the child's descriptor `target` (0: the child reads it).
// Returns 0 or an errno.
int make_pipe(int target, bool nonblocking, Stream& s) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return errno;
  UniqueFd read_end(p[0]);
  UniqueFd write_end(p[1]);
  s.child = std::move(target == 0 ? read_end : write_end);
  s.parent = std::move(target == 0 ? write_end : read_end);
  if (s.child.get() <= STDERR_FILENO) {
    const int moved = ::fcntl(s.child.get(), F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
    if (moved < 0) return errno;
    s.child.reset(moved);
  }
  // The epoll backend tries a pipe at once and waits for readiness only on
  // EAGAIN; before Linux 6.4 a pipe refuses RWF_NOWAIT, and the plain call
  // that follows a readiness check would block the worker on a write larger
  // than the room left. io_uring wants it blocking: it waits for readiness
  // itself, and answers an O_NONBLOCK fd with EAGAIN.
  if (nonblocking && ::fcntl(s.parent.get(), F_SETFL, O_NONBLOCK) != 0) return errno;
  return 0;
}

// The file actions for `streams` and `options`; 0 or an errno.
int add_actions(posix_spawn_file_actions_t& actions, const std::array<Stdio, 3>& kinds,
                const std::array<Stream, 3>& streams, const Options& options) {
  for (int target = 0; target < 3; ++target) {
    const auto i = static_cast<std::size_t>(target);
    int rc = 0;
    if (kinds[i] == Stdio::kNull) {
      rc = ::posix_spawn_file_actions_addopen(&actions, target, "/dev/null",
                                              target == 0 ? O_RDONLY : O_WRONLY, 0);
    } else if (kinds[i] == Stdio::kPipe) {
      rc = ::posix_spawn_file_actions_adddup2(&actions, streams[i].child.get(), target);
    }
    if (rc != 0) return rc;
  }
  if (!options.cwd.empty()) {
    if (const int rc = ::posix_spawn_file_actions_addchdir_np(&actions, options.cwd.c_str())) {
      return rc;
    }
  }
  return ::posix_spawn_file_actions_addclosefrom_np(&actions, STDERR_FILENO + 1);
}

// An empty signal mask and every signal at its default action.
int set_signals(posix_spawnattr_t& attr) {
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  if (const int rc = ::posix_spawnattr_setsigmask(&attr, &none)) return rc;
  if (const int rc = ::posix_spawnattr_setsigdefault(&attr, &all)) return rc;
  return ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
}

}  // namespace

Result<Child> spawn(const std::vector<std::string>& argv, const Options& options) {
  validate(argv, options);
  require_waitable_children();
  const std::string what = options.cwd.empty() ? argv[0] : argv[0] + " in " + options.cwd;
  auto fail = [&](int err) { return failure(detail::spawn_error(err, what)); };

  const std::array<Stdio, 3> kinds{options.std_in, options.std_out, options.std_err};
  const bool nonblocking = current_runtime().io_backend() == "epoll";
  std::array<Stream, 3> streams;
  for (int target = 0; target < 3; ++target) {
    const auto i = static_cast<std::size_t>(target);
    if (kinds[i] != Stdio::kPipe) continue;
    if (const int err = make_pipe(target, nonblocking, streams[i])) return fail(err);
  }
  SpawnArgs args;
  if (const int err = add_actions(args.actions, kinds, streams, options)) return fail(err);
  if (const int err = set_signals(args.attr)) return fail(err);
  const std::vector<std::string> env = environment(options);
  const std::vector<char*> argv_p = pointers(argv);
  const std::vector<char*> env_p = pointers(env);

  pid_t pid = -1;
  if (const int err =
          ::posix_spawnp(&pid, argv_p[0], &args.actions, &args.attr, argv_p.data(), env_p.data())) {
    return fail(err);
  }
  UniqueFd pidfd(detail::open_pidfd(pid));
  if (!pidfd) {
    // Out of descriptors, most likely: the child cannot be handed out, so it
    // ends here (SIGKILL takes effect at once; the wait reaps it).
    const int err = errno;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return fail(err);
  }
  return Child(pid, std::move(pidfd), Pipe(std::move(streams[0].parent)),
               Pipe(std::move(streams[1].parent)), Pipe(std::move(streams[2].parent)),
               options.kill_on_abort);
}

}  // namespace spindle::process
