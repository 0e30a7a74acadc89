#include "fd_limit.hpp"

#include <fmt/format.h>
#include <sys/resource.h>

#include <cstdio>

namespace spindle::apps {
namespace {

// Descriptors kept aside for everything but connections, besides two per worker.
constexpr std::size_t kReservedFds = 64;

}  // namespace

std::size_t raise_fd_limit() noexcept {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) return 1024;
  if (rl.rlim_cur != rl.rlim_max) {
    rlimit raised = rl;
    raised.rlim_cur = rl.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
  }
  return rl.rlim_cur == RLIM_INFINITY ? static_cast<std::size_t>(1) << 20
                                      : static_cast<std::size_t>(rl.rlim_cur);
}

std::size_t connections_within(std::size_t fd_limit, std::size_t workers) noexcept {
  const std::size_t reserved = kReservedFds + 2 * workers;
  return fd_limit > reserved ? fd_limit - reserved : 1;
}

std::size_t connection_limit(std::string_view program, std::size_t requested,
                             std::size_t workers) noexcept {
  const std::size_t fds = raise_fd_limit();
  const std::size_t room = connections_within(fds, workers);
  if (requested == 0) return room;
  if (requested > room) {
    fmt::print(stderr,
               "{}: note: --max-connections {} is more than the {} connections the descriptor "
               "limit (RLIMIT_NOFILE {}) leaves room for; accepts beyond that fail with EMFILE\n",
               program, requested, room, fds);
    std::fflush(stderr);
  }
  return requested;
}

}  // namespace spindle::apps
