// WorkerRemote: the part of a worker that other threads touch. Everything
// else about a worker (worker.hpp) is its own thread's alone; other threads
// hold a WorkerRemote*, never a Worker*.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "core/ready_entry.hpp"
#include "core/run_queue.hpp"
#include "core/stall_probe.hpp"
#include "park/mailbox.hpp"
#include "park/parker.hpp"
#include "spindle/sched/detail/core.hpp"

namespace spindle::detail {

class Scheduler;

// Thread-safe, member by member as noted. Lives inside its Worker, on the
// worker's thread, for the worker's lifetime; the scheduler's lists of
// workers point at it.
class WorkerRemote {
 public:
  WorkerRemote(Scheduler& scheduler, Placement placement, std::size_t index, EventFd* wake) noexcept
      : scheduler_(scheduler),
        placement_(placement),
        index_(index),
        parker_(wake),
        mailbox_(parker_) {}
  WorkerRemote(const WorkerRemote&) = delete;
  WorkerRemote& operator=(const WorkerRemote&) = delete;

  // Immutable.
  Scheduler& scheduler() const noexcept { return scheduler_; }
  Placement placement() const noexcept { return placement_; }
  std::size_t index() const noexcept { return index_; }

  // Ends the worker's current or next park.
  void unpark() noexcept { parker_.unpark(); }
  // Hands the worker a message (a pinned fiber made ready, an I/O cancel).
  void send(const MailMessage& m) noexcept { mailbox_.send(m); }
  // Thieves call steal_into() and the read-only queries; every other
  // operation is the owner's.
  RunQueue<ReadyEntry>& run_queue() noexcept { return run_queue_; }
  const RunQueue<ReadyEntry>& run_queue() const noexcept { return run_queue_; }
  // The turn counter and stack capture of the stall detector and the watch.
  StallProbe& stall_probe() noexcept { return stall_probe_; }
  const StallProbe& stall_probe() const noexcept { return stall_probe_; }

  // Fibers spawned and finished here (pool workers only), read by any thread
  // for the live count (Scheduler::live_fibers). Written only by the owner.
  // On a line of their own, away from what other threads write.
  alignas(64) std::atomic<std::uint64_t> spawned{0};
  std::atomic<std::uint64_t> finished{0};
  // Set by the owner while it is idle spinning on its backend's completions
  // (from the spin until it sleeps or runs a fiber: a wake that brings it
  // nothing keeps it set); a hint for a worker choosing where a lone
  // I/O-woken fiber runs (Worker::pass_lone_fiber). Any thread reads it.
  std::atomic<bool> io_spinning{false};

 private:
  friend class Worker;  // the owner's side of the parker and the mailbox

  Scheduler& scheduler_;
  const Placement placement_;
  const std::size_t index_;
  RunQueue<ReadyEntry> run_queue_;
  Parker parker_;
  Mailbox mailbox_;
  // Written by the owner twice per fiber switch: on a line of its own, away
  // from the parker and mailbox that waking threads write.
  alignas(64) StallProbe stall_probe_;
};

}  // namespace spindle::detail
