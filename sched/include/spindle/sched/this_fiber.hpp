// this_fiber: calls about the running fiber. Each also works on a plain thread
// (outside any fiber) with the plain-thread meaning noted. Each acts on the
// calling fiber only, so any number of fibers may call them at once.
// id() and aborted() never suspend.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <utility>

#include "spindle/base/result.hpp"
#include "spindle/sched/detail/wait.hpp"

namespace spindle::detail {
// The deadline scope of with_deadline: the caller's scope is the earlier of
// the one around it and `deadline` while this object lives. Lives on the
// caller's stack; scopes end in the reverse order they began.
class DeadlineScope {
 public:
  explicit DeadlineScope(Deadline deadline) noexcept;
  ~DeadlineScope();
  DeadlineScope(const DeadlineScope&) = delete;
  DeadlineScope& operator=(const DeadlineScope&) = delete;

 private:
  Deadline& slot_;  // the fiber's (or plain thread's) scope
  const Deadline outer_;
};
}  // namespace spindle::detail

namespace spindle::this_fiber {

// Puts the fiber at the tail of its worker's run queue and runs others first.
// Returns errc::aborted if the fiber is aborted. Plain thread: std::this_thread::yield.
// Suspends: until the worker picks it again.
Result<void> yield();

// Like yield(), but the fiber runs again only after its worker has also
// passed through its I/O backend (started the queued operations and collected the
// completions ready by then) and run the fibers those completions woke. For
// batching: a fiber that gathers work from others, such as a group commit,
// calls it until a pass brings nothing new. Returns errc::aborted if the
// fiber is aborted. Plain thread: std::this_thread::yield.
// Suspends: for an io::nop() on the worker's I/O backend, then as yield().
Result<void> yield_to_io();

// A hint for batching, given just before the fiber parks to wait for others'
// requests: the next time its worker runs out of ready fibers with I/O in
// flight, it sleeps until `count` of those operations have completed (all of
// them, if fewer are in flight), until `deadline`, or until its next timer,
// instead of waking for each completion. A group commit holding a write open
// for clients still on their way calls it with the number of clients it
// expects: their requests then arrive in one wake, as they would to a server
// that sleeps in fsync. Meanwhile any completion, and a wake from another
// thread, waits as well, at most until `deadline`. The hint lapses at that
// park, or when the fiber resumes on this worker first; count <= 1 or a
// deadline already passed has no effect. Never suspends. Plain thread: no-op.
void expect_completions(std::size_t count, Deadline deadline) noexcept;

// Parks the fiber until `deadline` (steady clock). A deadline already passed
// returns at once. Returns errc::aborted, early, if the fiber is aborted
// (at once if it already was). Plain thread: sleeps.
// Suspends: until the deadline or an abort.
Result<void> sleep_until(Deadline deadline);

// sleep_until(now + d); d <= 0 returns at once. Durations clamp to 30 years.
// Suspends: until the deadline or an abort.
Result<void> sleep_for(std::chrono::nanoseconds d);

template <class Rep, class Period>
Result<void> sleep_for(std::chrono::duration<Rep, Period> d) {
  constexpr auto kMax = std::chrono::hours(24 * 365 * 30);
  if (d > kMax) return sleep_for(std::chrono::nanoseconds(kMax));
  return sleep_for(std::chrono::duration_cast<std::chrono::nanoseconds>(d));
}

// A deadline on another clock (e.g. system_clock) is converted once, now.
template <class C, class D>
Result<void> sleep_until(std::chrono::time_point<C, D> t) {
  return sleep_for(t - C::now());
}

// Runs fn() with `deadline` over every blocking call it makes on this fiber
// (on a plain thread: on this thread), and returns what fn returns. A call
// that would wait past the deadline ends there with errc::timed_out: channel,
// select, mutex try_lock_until, condvar, event, semaphore, wait group, join,
// stop signal, sleep, and every spindle::io, net and storage call that may be
// cut short. A call with its own deadline or timeout waits until the earlier
// of the two; its own one ends it as it always does (a wait_until's false),
// the scope's with errc::timed_out. Scopes nest, and an inner scope cannot
// outlast an outer one. Calls that need not wait still succeed after the
// deadline. Never cut short: what is never cancelled (storage's writes and
// syncs, io::fsync, any spindle::io call with IoOptions::cancellable false)
// and Mutex::lock (it cannot fail; use try_lock_until). A net read or write
// the scope cuts short poisons its stream as a timeout does.
template <class F>
decltype(auto) with_deadline(Deadline deadline, F&& fn) {
  detail::DeadlineScope scope(deadline);
  return std::invoke(std::forward<F>(fn));
}
// with_deadline(now + timeout, fn).
template <class F>
decltype(auto) with_timeout(std::chrono::nanoseconds timeout, F&& fn) {
  return with_deadline(deadline_after(timeout), std::forward<F>(fn));
}
// The deadline of the innermost scope around the caller; kNoDeadline
// outside any. Never suspends.
Deadline deadline() noexcept;

// The running fiber's id (unique within its run of a runtime, counted from 1 in each run:
// two runtimes in one process both have a fiber 1); 0 on a plain thread.
std::uint64_t id() noexcept;

// True once the running fiber is aborted; false on a plain thread.
bool aborted() noexcept;

}  // namespace spindle::this_fiber
