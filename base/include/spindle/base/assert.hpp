// Invariant checks. SPINDLE_ASSERT is always on; SPINDLE_DCHECK only in debug builds.
// A failed check is a bug in spindle: it prints the condition and aborts.
// Usable on any thread or fiber; never suspends.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace spindle::detail {

[[noreturn, gnu::cold, gnu::noinline]] inline void assert_fail(const char* cond, const char* msg,
                                                               const char* file, int line) {
  std::fprintf(stderr, "spindle: invariant broken at %s:%d: %s%s%s\n", file, line, cond,
               msg[0] ? ": " : "", msg);
  std::fflush(stderr);
  std::abort();
}

}  // namespace spindle::detail

#define SPINDLE_ASSERT(cond, ...)                                                \
  do {                                                                           \
    if (__builtin_expect(!(cond), 0))                                            \
      ::spindle::detail::assert_fail(#cond, "" __VA_ARGS__, __FILE__, __LINE__); \
  } while (0)

#ifdef SPINDLE_DEBUG
#define SPINDLE_DCHECK(cond, ...) SPINDLE_ASSERT(cond, __VA_ARGS__)
#else
#define SPINDLE_DCHECK(cond, ...) \
  do {                            \
    if (false) (void)(cond);      \
  } while (0)
#endif
