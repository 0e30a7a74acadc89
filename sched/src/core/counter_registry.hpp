// The process-wide registry behind RuntimeCounter and RuntimeGauge: which
// name, help and type each counter slot carries. Declarations add to it;
// scrapes (Metrics::Collect) read it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace spindle::detail {

enum class CounterKind : std::uint8_t { kCounter, kGauge };

struct DeclaredCounter {
  std::string_view name;
  std::string_view help;
  CounterKind kind;
};

// Lists a new counter and returns its slot, in [0, kMaxRuntimeCounters).
// Thread-safe; callable during static initialisation. Aborts with a message on
// a declaration RuntimeCounter's contract forbids.
std::size_t declare_counter(std::string_view name, std::string_view help, CounterKind kind);

// The counters declared so far; entry i has slot i. Thread-safe: an entry
// never changes once listed, and later declarations only append.
std::span<const DeclaredCounter> declared_counters() noexcept;

}  // namespace spindle::detail
