// SelectCase: one case of a select as the select loop sees it, and the loop.
#pragma once

#include <cstddef>
#include <optional>
#include <span>

#include "spindle/base/result.hpp"
#include "spindle/base/time.hpp"
#include "spindle/sched/detail/spinlock.hpp"
#include "spindle/sched/detail/wait.hpp"

namespace spindle::detail {

// The most cases one select takes.
inline constexpr std::size_t kMaxSelectCases = 32;

// Not thread-safe: lives on the selecting fiber's or thread's stack for one
// select. A case of a primitive names the primitive's lock; a timer case
// names none and has a deadline instead. try_fire, enqueue and dequeue run
// with the lock held (every lock of the select is held then).
class SelectCase {
 public:
  SelectCase(const SelectCase&) = delete;
  SelectCase& operator=(const SelectCase&) = delete;

  SpinLock* lock() const noexcept { return lock_; }
  Deadline deadline() const noexcept { return deadline_; }

  // Completes the case now if it can (takes the value, hands its value over,
  // sees the event set, the deadline passed, ...); false leaves everything as
  // it was.
  virtual bool try_fire() = 0;
  // Links `node` into the primitive's wait queue, with what a notifier hands
  // over through node.data.
  virtual void enqueue(WaitNode& node) = 0;
  // Unlinks `node` if it is still linked.
  virtual void dequeue(WaitNode& node) = 0;
  // Its node won the select: takes what the notifier handed over. The
  // notifier is done with the primitive; no lock is held.
  virtual void won() {}

  // This case's node in its primitive's queue while the select waits.
  std::optional<WaitNode> waiter;

 protected:
  explicit SelectCase(SpinLock* lock, Deadline deadline = kNoDeadline) noexcept
      : lock_(lock), deadline_(deadline) {}
  ~SelectCase() = default;

 private:
  SpinLock* const lock_;
  const Deadline deadline_;
};

// The select: fires one of `cases` that can fire now, chosen at random, or
// with `block` waits until one can and fires it; returns its index. Without
// `block`, nothing ready: std::nullopt. errc::aborted for an aborted fiber
// (checked first when blocking). At most kMaxSelectCases cases.
// Suspends: with `block`, until a case fires or abort.
Result<std::optional<std::size_t>> select_cases(std::span<SelectCase* const> cases, bool block);

}  // namespace spindle::detail
