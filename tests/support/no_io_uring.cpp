// spindle-no-io-uring PROGRAM [ARGS...]: runs PROGRAM with io_uring_setup
// refused (EPERM) by a seccomp filter, as in a default Docker or containerd
// container. Exits 125 with a message on stderr if the filter cannot be
// installed, 127 if PROGRAM cannot be run.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "seccomp.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: spindle-no-io-uring PROGRAM [ARGS...]\n");
    return 2;
  }
  if (!spindle::test::block_io_uring_setup()) {
    std::fprintf(stderr, "spindle-no-io-uring: seccomp filters are not available: %s\n",
                 std::strerror(errno));
    return 125;
  }
  ::execvp(argv[1], argv + 1);
  std::fprintf(stderr, "spindle-no-io-uring: cannot run %s: %s\n", argv[1], std::strerror(errno));
  return 127;
}
