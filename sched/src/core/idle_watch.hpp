// IdleWatch: a parked pool worker's watch over the others (idle_set.hpp
// says when a worker watches): it parks with a timeout and, when the watch
// is due, takes a fiber queued alone behind a turn that has lasted it.
#pragma once

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "spindle/base/time.hpp"

namespace spindle::detail {

class Scheduler;
class WorkerRemote;

// Worker-affine: one per pool worker, used by its own thread.
class IdleWatch {
 public:
  // A watcher looks again after kWatchMin while the workers it watches have
  // fibers queued, and backs off, doubling up to kWatchMax, while they have
  // none. A fiber queued alone behind a turn longer than the watch moves to
  // the watcher.
  static constexpr auto kWatchMin = std::chrono::microseconds(100);
  static constexpr auto kWatchMax = std::chrono::microseconds(1600);

  // Before parking: claims the watch if another pool worker is awake and no
  // parked one holds it, and records the others' turn counts if no record
  // is kept from an earlier watch. Returns how long the park may last at
  // most, or nullopt if this worker does not watch.
  std::optional<std::chrono::nanoseconds> begin(Scheduler& scheduler, std::size_t self) noexcept;
  // After the park: gives the watch back, and notes whether it is due.
  void end(Scheduler& scheduler) noexcept;

  // Whether a search should act on the watch (once per due watch).
  bool take_due() noexcept;
  // Whether `victim` has stayed in one fiber's turn since the watch began.
  bool stuck(const WorkerRemote& victim) const noexcept;
  // After a due watch's search: the next watch is short if it found queued
  // fibers, else twice as long as this one (up to kWatchMax).
  void rearm(bool found_queued) noexcept;

 private:
  bool watching_ = false;  // this worker holds the watch (only while parked)
  bool due_ = false;       // the watch has lasted interval_
  // When the pool workers' turns were recorded in turns_ (by index); the
  // epoch when there is no record.
  Deadline start_{};
  std::chrono::nanoseconds interval_ = kWatchMin;
  std::array<std::uint64_t, 64> turns_{};
};

}  // namespace spindle::detail
