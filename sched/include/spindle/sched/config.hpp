// spindle::Config: every runtime setting, validated before any thread, ring or
// stack is created.
// Plain values: copy freely, thread-safe to read; nothing here suspends.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "spindle/base/log.hpp"

namespace spindle {

// Idle spinning before a worker parks (the reference's adaptive spinner): for
// cross-thread wakes, and on io_uring for completions too.
// `budget_us` is the initial and minimum spin budget, `max_budget_us` its cap;
// a park shorter than `quick_wake_us` grows the budget. {0, 0, 0} disables it.
struct IdleSpinner {
  std::uint32_t budget_us = 2;
  std::uint32_t max_budget_us = 10;
  std::uint32_t quick_wake_us = 10;

  static constexpr IdleSpinner disabled() noexcept { return {0, 0, 0}; }
};

// The kernel interface that performs a runtime's I/O.
enum class IoBackendKind : std::uint8_t {
  // io_uring where it can be set up with what spindle needs, else epoll,
  // with one log line (on_log) naming the cause.
  kAuto,
  // io_uring, or Runtime::run throws saying what is missing and how to allow
  // it.
  kIoUring,
  // epoll: sockets and pipes by readiness, file operations on the blocking
  // pool (spawn_blocking's threads, Config::blocking_threads).
  kEpoll,
};

// Plain aggregate; set fields with designated initializers:
//   spindle::Runtime rt(spindle::Config{.workers = 4});
// Runtime's constructor calls validate().
struct Config {
  // Pool workers including the thread that calls Runtime::run. 1..64.
  std::size_t workers = 2;
  // A busy worker looks at the global queue first every this many picks. Nonzero.
  std::uint32_t global_queue_interval = 31;
  // Per-worker io_uring submission queue size: the operations one
  // io_uring_enter hands to the kernel (more are handed over early); rounded
  // up to a power of two, at most 32768. Not a cap on operations in flight.
  std::uint32_t ring_entries = 1024;
  // The I/O backend. The environment variable SPINDLE_IO_BACKEND (auto,
  // io_uring or epoll), when set, overrides it: a program can be switched
  // without a rebuild.
  IoBackendKind io_backend = IoBackendKind::kAuto;
  // Per-worker cap on I/O operations in flight (each an io_op, an idle
  // connection's read among them; each holds kernel memory until it ends).
  // One more fails at once with errc::io_limit, and the runtime logs a
  // warning (on_log, at most once a second). Nonzero.
  std::size_t max_io_in_flight = std::size_t{1} << 20;
  // Granularity of operation deadlines (the timing wheel's tick). Nonzero.
  std::chrono::nanoseconds timeout_wheel_tick = std::chrono::milliseconds(5);
  // Usable bytes of each fiber stack (virtual; committed as touched), rounded
  // up to the page size. 16 KiB .. 1 GiB.
  std::size_t stack_size = 256 * 1024;
  IdleSpinner idle_spinner{};
  // false: an exception escaping a fiber fails the runtime (Runtime::run
  // rethrows it after shutdown). true: it is logged and join() reports it.
  bool catch_exceptions = false;
  // Upper bound on spawn_blocking threads. >= 1.
  std::size_t blocking_threads = 512;
  // Network deadlines (used by net/); the larger is the timing wheel's
  // horizon, which sizes it (a later deadline is held at the horizon and
  // moved on). Nonzero, at most 30 years, and must fit 2^20 wheel slots.
  std::chrono::nanoseconds connect_timeout = std::chrono::seconds(10);
  std::chrono::nanoseconds read_write_timeout = std::chrono::seconds(60);
  // net/: bytes of each TcpStream's read buffer, allocated at its first read.
  // 1 byte .. 1 GiB.
  std::size_t read_buffer_size = 64 * 1024;
  // net/: TCP_NODELAY on every connected and accepted socket.
  bool tcp_nodelay = true;
  // net/: SO_LINGER {on, 0} on every connected and accepted socket: close()
  // resets the connection at once and leaves no TIME_WAIT behind.
  bool zero_linger = true;

  // Stall detector: a watchdog thread reports a worker that has run one fiber
  // for longer than this without it suspending (a busy loop or a blocking
  // system call starving the worker's other fibers), once per stall, with the
  // fiber's name and backtrace, as a warning to on_log. Zero turns it off.
  // At most 1 hour.
  std::chrono::milliseconds stall_threshold{100};
  // Receives every message the runtime and the libraries on it log: a task's
  // exception under catch_exceptions (kError), a stall report or a limit
  // reached (kWarning), a kernel feature done without (kInfo). Called on the
  // thread that logs (a worker, the watchdog, a blocking-pool thread): see
  // LogSink. Empty: stderr, each message prefixed "spindle: ".
  LogSink on_log{};

  // Throws std::invalid_argument naming the offending setting. Rounds
  // ring_entries and stack_size up in place.
  void validate();
};

// The signal the stall detector sends a stalled worker for its backtrace
// (SIGRTMIN + 5), whose handler the runtime installs: not for other uses.
int stall_capture_signal() noexcept;

}  // namespace spindle
