// Declares runtime counters until one more than kMaxRuntimeCounters would be
// declared; the declaration past the limit must say so and abort.
#include <cstdio>
#include <deque>
#include <spindle/spindle.hpp>
#include <string>

int main() {
  // Names outlive their counters: the registry keeps views of them.
  static std::deque<std::string> names;
  static std::deque<spindle::RuntimeCounter> counters;
  for (std::size_t i = 0; i <= spindle::kMaxRuntimeCounters; ++i) {
    const std::string& name =
        names.emplace_back("runtime_overflow_" + std::to_string(i) + "_total");
    counters.emplace_back(name, "A counter past the limit.");
  }
  std::puts("every declaration was accepted");
  return 0;
}
