// SPINDLE_SKIP: end the current test as skipped because the machine lacks
// something (a kernel feature, a program, IPv6). ctest maps exit code 77 to
// "skipped"; the message says what is missing.
#pragma once

#include <cstdio>
#include <cstdlib>

#define SPINDLE_SKIP(...)                          \
  do {                                             \
    std::fprintf(stderr, "SKIPPED: " __VA_ARGS__); \
    std::fputc('\n', stderr);                      \
    std::fflush(stderr);                           \
    std::_Exit(77);                                \
  } while (0)
