// Raising this process's descriptor limit for tests that hold thousands of
// sockets or pipes at once, or skipping when the machine does not allow it.
#pragma once

#include <sys/resource.h>

#include <cstddef>

#include "skip.hpp"

namespace spindle::test {

// Raises the soft RLIMIT_NOFILE to the hard one if it is below `need`
// (children started later inherit it); skips the test, naming both numbers,
// when the hard limit is below `need`. `what` says what the descriptors are for.
inline void require_fd_limit(std::size_t need, const char* what) {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) SPINDLE_SKIP("getrlimit(RLIMIT_NOFILE) failed");
  if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur >= need) return;
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) {
    SPINDLE_SKIP("%s needs %zu file descriptors, but the hard RLIMIT_NOFILE is %llu (ulimit -Hn)",
                 what, need, static_cast<unsigned long long>(rl.rlim_max));
  }
  rl.rlim_cur = rl.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &rl) != 0) SPINDLE_SKIP("setrlimit(RLIMIT_NOFILE) failed");
}

}  // namespace spindle::test
