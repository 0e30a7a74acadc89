// The select loop. With every case's lock held (each distinct lock once, in
// address order, so that two selects over the same primitives cannot
// deadlock), the cases are tried in a random order and the first that can
// fire does. Otherwise each case's node joins its primitive's queue, all
// sharing one SelectClaim and the fiber's one park epoch, and the locks are
// released once the caller can be woken. The first notify to win the claim
// decides the case; a notifier that loses it undoes its hand-over, as with any
// claimed wait. Afterwards the locks are taken once more to unlink the nodes
// still queued: then no notifier is working on any of them, and the winner's
// hand-over is complete.

#include "spindle/sched/detail/select.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>

#include "core/scheduler.hpp"
#include "park/futex.hpp"
#include "spindle/base/assert.hpp"
#include "spindle/sched/detail/core.hpp"
#include "spindle/sched/detail/fiber.hpp"

namespace spindle::detail {
namespace {

// The distinct locks of a select, in address order.
struct LockSet {
  std::array<SpinLock*, kMaxSelectCases> locks{};
  std::size_t n = 0;

  explicit LockSet(std::span<SelectCase* const> cases) noexcept {
    for (SelectCase* c : cases) {
      if (c->lock() != nullptr) locks[n++] = c->lock();
    }
    std::sort(locks.begin(), locks.begin() + static_cast<std::ptrdiff_t>(n));
    n = static_cast<std::size_t>(std::unique(locks.begin(), locks.begin() + n) - locks.begin());
  }
  void lock() noexcept SPINDLE_NO_THREAD_SAFETY_ANALYSIS {
    for (std::size_t i = 0; i < n; ++i) locks[i]->lock();
  }
  void unlock() noexcept SPINDLE_NO_THREAD_SAFETY_ANALYSIS {
    for (std::size_t i = n; i > 0; --i) locks[i - 1]->unlock();
  }
};

// park_fiber's release: the worker runs it once the fiber can be woken.
void unlock_set(void* set) noexcept { static_cast<LockSet*>(set)->unlock(); }

// A random order of `n` cases (Fisher-Yates on a per-thread xorshift, or in
// a simulation on its seeded generator), so that no ready case starves
// another.
std::array<std::uint8_t, kMaxSelectCases> random_order(std::size_t n) noexcept {
  thread_local std::uint64_t state =
      0x9e3779b97f4a7c15ULL ^
      static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  const Scheduler* s = current_scheduler();
  Simulation* sim = s ? s->sim : nullptr;
  std::array<std::uint8_t, kMaxSelectCases> order{};
  for (std::size_t i = 0; i < n; ++i) order[i] = static_cast<std::uint8_t>(i);
  for (std::size_t i = n; i > 1; --i) {
    if (sim) [[unlikely]] {
      std::swap(order[i - 1], order[sim->below(i)]);
      continue;
    }
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    std::swap(order[i - 1], order[state % i]);
  }
  return order;
}

// The case a deadline fired: the timer case with the earliest deadline.
std::size_t earliest_timer(std::span<SelectCase* const> cases) noexcept {
  std::size_t best = cases.size();
  for (std::size_t i = 0; i < cases.size(); ++i) {
    if (cases[i]->lock() == nullptr &&
        (best == cases.size() || cases[i]->deadline() < cases[best]->deadline())) {
      best = i;
    }
  }
  SPINDLE_ASSERT(best < cases.size(), "a select timed out without a timer case");
  return best;
}

}  // namespace

Result<std::optional<std::size_t>> select_cases(std::span<SelectCase* const> cases, bool block) {
  SPINDLE_ASSERT(!cases.empty() && cases.size() <= kMaxSelectCases, "a select takes 1 to 32 cases");
  if (block && current_aborted()) return failure(errc::aborted);
  const auto order = random_order(cases.size());
  LockSet locks(cases);
  locks.lock();
  for (std::size_t k = 0; k < cases.size(); ++k) {
    if (cases[order[k]]->try_fire()) {
      locks.unlock();
      return std::optional<std::size_t>(order[k]);
    }
  }
  if (!block) {
    locks.unlock();
    return std::optional<std::size_t>();
  }

  Deadline deadline = kNoDeadline;
  for (SelectCase* c : cases) deadline = std::min(deadline, c->deadline());
  SelectClaim claim;
  Fiber* f = current_fiber();
  if (f != nullptr) ++f->epoch;  // one park for every node
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SelectCase& c = *cases[i];
    c.waiter.emplace(claim, static_cast<std::uint32_t>(i));
    if (c.lock() != nullptr) c.enqueue(*c.waiter);
  }
  WakeReason reason = WakeReason::kNotified;
  std::uint32_t word = 0;
  if (f != nullptr) {
    reason = park_fiber(*cases[0]->waiter, deadline, ParkKind::kInterruptible, "select",
                        &unlock_set, &locks);
    // Read after the wake: a winning notify stored it before claiming the park.
    word = claim.word.load(std::memory_order_acquire);
  } else {
    locks.unlock();
    bool from_scope = false;
    word = wait_for_claim(claim.word, effective_deadline(deadline, from_scope),
                          SelectClaim::kTimedOut);
    if (word == SelectClaim::kTimedOut) {
      reason = from_scope ? WakeReason::kScopeExpired : WakeReason::kTimedOut;
    }
  }

  locks.lock();
  for (SelectCase* c : cases) {
    if (c->lock() != nullptr) c->dequeue(*c->waiter);
  }
  locks.unlock();
  for (SelectCase* c : cases) c->waiter.reset();

  switch (reason) {
    case WakeReason::kAborted:
      return failure(errc::aborted);
    case WakeReason::kScopeExpired:
      return failure(errc::timed_out);
    case WakeReason::kTimedOut:
      return std::optional<std::size_t>(earliest_timer(cases));
    case WakeReason::kNotified:
      break;
  }
  const std::size_t won = word - 1;
  cases[won]->won();
  return std::optional<std::size_t>(won);
}

}  // namespace spindle::detail
