// Overflows the stack of a named fiber; the runtime must report it and abort.
#include <cstdio>
#include <spindle/spindle.hpp>

namespace {

// Never set: it only keeps the compiler from proving the recursion infinite.
volatile bool stop = false;

// Each frame touches a page-sized array, so the recursion reaches the guard
// page after a few dozen calls of a 256 KiB stack.
[[gnu::noinline]] int recurse(int depth) {
  if (stop) return depth;
  volatile char frame[4096];
  frame[0] = static_cast<char>(depth);
  frame[sizeof frame - 1] = static_cast<char>(depth);
  return recurse(depth + 1) + frame[0] + frame[sizeof frame - 1];
}

}  // namespace

int main() {
  spindle::Runtime rt(spindle::Config{.workers = 2});
  rt.run([] {
    auto h = spindle::spawn("overflower", [] { return recurse(0); });
    (void)h.join();
  });
  std::puts("unreachable: the overflow was not caught");
  return 0;
}
