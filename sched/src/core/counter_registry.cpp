#include "core/counter_registry.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "spindle/sched/runtime_counter.hpp"

namespace spindle::detail {
namespace {

// Constant-initialised (constinit), so a declaration from another
// translation unit's static initialiser finds it ready.
struct Registry {
  std::mutex mutex;  // serializes declarations
  // Invariant: entries [0, listed) are immutable; entries past it are written
  // only under `mutex`.
  std::array<DeclaredCounter, kMaxRuntimeCounters> entries{};
  // release in declare_counter, after the entry; pairs with the acquire in
  // declared_counters().
  std::atomic<std::size_t> listed{0};
};

constinit Registry registry;

[[noreturn]] void refuse(std::string_view name, const char* why) {
  std::fprintf(stderr, "spindle: cannot declare runtime counter '%.*s': %s\n",
               static_cast<int>(name.size()), name.data(), why);
  std::fflush(stderr);
  std::abort();
}

bool valid_name(std::string_view name) noexcept {
  return name.starts_with("runtime_") && std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
         });
}

}  // namespace

std::size_t declare_counter(std::string_view name, std::string_view help, CounterKind kind) {
  if (!valid_name(name)) refuse(name, "the name must match runtime_[a-z0-9_]*");
  if ((kind == CounterKind::kCounter) != name.ends_with("_total")) {
    refuse(name, "a counter's name ends in _total and a gauge's does not");
  }
  std::lock_guard lock(registry.mutex);
  const std::size_t n = registry.listed.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < n; ++i) {
    if (registry.entries[i].name == name) refuse(name, "the name is already declared");
  }
  if (n == kMaxRuntimeCounters) refuse(name, "kMaxRuntimeCounters are declared already");
  registry.entries[n] = {name, help, kind};
  registry.listed.store(n + 1, std::memory_order_release);
  return n;
}

std::span<const DeclaredCounter> declared_counters() noexcept {
  return {registry.entries.data(), registry.listed.load(std::memory_order_acquire)};
}

}  // namespace spindle::detail
