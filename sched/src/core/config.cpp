#include "spindle/sched/config.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <bit>
#include <stdexcept>
#include <string>

namespace spindle {
namespace {

constexpr std::size_t kMaxWorkers = 64;  // the idle set is one 64-bit word
constexpr std::uint32_t kMaxRingEntries = 32768;
constexpr std::size_t kMinStack = 16 * 1024;
constexpr std::size_t kMaxStack = std::size_t{1} << 30;
constexpr std::uint64_t kMaxWheelSlots = std::uint64_t{1} << 20;
constexpr std::size_t kMaxReadBuffer = std::size_t{1} << 30;
constexpr auto kMaxTimeout = std::chrono::hours(24 * 365 * 30);

[[noreturn]] void invalid(const std::string& what) {
  throw std::invalid_argument("spindle::Config: " + what);
}

void check_timeout(const char* name, std::chrono::nanoseconds t) {
  if (t <= std::chrono::nanoseconds::zero()) invalid(fmt::format("{} must be positive", name));
  if (t > kMaxTimeout) invalid(fmt::format("{} must be at most 30 years", name));
}

}  // namespace

void Config::validate() {
  if (workers < 1 || workers > kMaxWorkers)
    invalid(fmt::format("workers ({}) must be between 1 and {}", workers, kMaxWorkers));
  if (global_queue_interval == 0) invalid("global_queue_interval must be nonzero");
  if (ring_entries == 0) invalid("ring_entries must be nonzero");
  if (ring_entries > kMaxRingEntries)
    invalid(fmt::format("ring_entries ({}) must be at most {}", ring_entries, kMaxRingEntries));
  ring_entries = std::bit_ceil(ring_entries);
  if (max_io_in_flight == 0) invalid("max_io_in_flight must be nonzero");
  if (stack_size < kMinStack || stack_size > kMaxStack)
    invalid(fmt::format("stack_size ({}) must be between {} and {} bytes", stack_size, kMinStack,
                        kMaxStack));
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  stack_size = (stack_size + page - 1) / page * page;
  if (idle_spinner.budget_us > idle_spinner.max_budget_us)
    invalid(
        fmt::format("idle_spinner.budget_us ({}) must not exceed idle_spinner.max_budget_us ({})",
                    idle_spinner.budget_us, idle_spinner.max_budget_us));
  if (blocking_threads == 0) invalid("blocking_threads must be at least 1");
  if (timeout_wheel_tick <= std::chrono::nanoseconds::zero())
    invalid("timeout_wheel_tick must be positive");
  check_timeout("connect_timeout", connect_timeout);
  check_timeout("read_write_timeout", read_write_timeout);
  if (read_buffer_size < 1 || read_buffer_size > kMaxReadBuffer)
    invalid(fmt::format("read_buffer_size ({}) must be between 1 and {} bytes", read_buffer_size,
                        kMaxReadBuffer));
  if (stall_threshold < std::chrono::milliseconds::zero() ||
      stall_threshold > std::chrono::hours(1))
    invalid(fmt::format("stall_threshold ({} ms) must be between 0 (off) and 1 hour",
                        stall_threshold.count()));
  const auto horizon = std::max(connect_timeout, read_write_timeout);
  const auto ticks =
      (horizon.count() + timeout_wheel_tick.count() - 1) / timeout_wheel_tick.count();
  if (static_cast<std::uint64_t>(ticks) + 1 > kMaxWheelSlots)
    invalid(fmt::format(
        "connect_timeout/read_write_timeout ({} ms) over timeout_wheel_tick ({} ns) needs more "
        "than {} timing wheel slots; raise timeout_wheel_tick",
        std::chrono::duration_cast<std::chrono::milliseconds>(horizon).count(),
        timeout_wheel_tick.count(), kMaxWheelSlots));
}

}  // namespace spindle
