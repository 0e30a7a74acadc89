// TimeoutWheel: a worker's single-level hashed timing wheel (Varghese &
// Lauck) for I/O operation deadlines. Sleeps use the timer heap instead.
//
// Time is cut into ticks of `tick` counted from `start`; a deadline maps to the
// first tick boundary at or after it, and tick t lives in slot t & (slots - 1).
// The wheel has slots = bit_ceil(ceil(horizon / tick) + 1) and holds targets
// in (current, current + slots - 1], so the live targets always fit one
// revolution and each slot holds entries of a single tick. Deadlines already
// past go to current + 1. A deadline beyond the horizon waits at the horizon
// and is re-armed there, as often as needed: an entry expires at its own
// deadline's tick, never earlier, whatever the horizon.
//
// Unlike the reference (which counts removals and skips stale entries when a
// bucket drains), each slot is a doubly linked list, so remove() is O(1) and
// a cancelled operation leaves nothing behind. The list's nodes are not the
// entries themselves but the wheel's own, in one array, linked by index:
// an entry lives in its operation's record, on a parked fiber's stack, and
// unlinking an entry from its neighbours' records would write two cache
// lines of other fibers' cold stacks per removal (with a thousand parked
// reads in a slot, the most expensive step of an epoll read); the array
// holds one node per linked entry, a few lines that stay cached. An
// occupancy bitset lets advance() and next_deadline() skip empty slots a word
// at a time.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "spindle/base/assert.hpp"
#include "spindle/base/time.hpp"

namespace spindle::detail {

// Embedded by the user in its own operation record; the wheel never owns it.
// An entry must stay at the same address while linked.
struct WheelEntry {
  static constexpr std::uint32_t kUnlinked = ~std::uint32_t{0};
  // While linked, the index of its node in the wheel, in the list of the
  // slot of target_tick; kUnlinked otherwise.
  std::uint32_t node = kUnlinked;
  // The tick of the entry's deadline; set by TimeoutWheel::insert().
  std::uint64_t deadline_tick = 0;
  // The tick whose slot holds the entry: deadline_tick, or the horizon while
  // that is beyond it.
  std::uint64_t target_tick = 0;

  bool linked() const { return node != kUnlinked; }
};

// Worker-affine: not thread-safe. Every call, including on_expired callbacks
// run by advance(), happens on the owning worker's thread.
class TimeoutWheel {
 public:
  static constexpr std::uint64_t kMaxSlots = std::uint64_t{1} << 20;

  // Throws std::invalid_argument (see validate()). Allocates one index (a
  // list) per slot plus one bit per slot; nodes as entries are linked.
  TimeoutWheel(std::chrono::nanoseconds tick, std::chrono::nanoseconds horizon,
               Clock::time_point start);
  TimeoutWheel(const TimeoutWheel&) = delete;
  TimeoutWheel& operator=(const TimeoutWheel&) = delete;

  // Throws std::invalid_argument unless tick > 0, horizon > 0 and
  // ceil(horizon / tick) + 1 <= kMaxSlots; the message names the Config setting
  // to change (timeout_wheel_tick, or the timeouts that make the horizon).
  static void validate(std::chrono::nanoseconds tick, std::chrono::nanoseconds horizon);

  // Schedules `e` (which must not be linked) to expire at the first tick
  // boundary at or after `deadline`, at the earliest at current tick + 1. A
  // deadline in the past therefore expires at the first advance() that
  // reaches current tick + 1, not in an advance() to the same tick; one beyond
  // the horizon (current tick + slots - 1) is held at the horizon and moved on
  // from there until its tick comes.
  void insert(WheelEntry* e, Clock::time_point deadline) noexcept;

  // Unlinks `e` in O(1) so it never expires. A no-op if `e` is not linked (it
  // already expired, or was never inserted), so a completion that races its
  // expiry can always call it. `e` must not be linked into another wheel.
  void remove(WheelEntry* e) noexcept;

  // Moves the current tick to floor((now - start) / tick) (never backwards) and
  // expires, in tick order, every entry whose deadline's tick is at or before
  // it: each is unlinked and then passed to `on_expired(WheelEntry*)`. An
  // entry held at the horizon whose tick is still ahead moves to the new
  // horizon instead. The callback may insert and remove entries, including
  // ones in the slot being visited; what it inserts gets a target after the
  // new current tick, so it does not expire in this call. The callback must
  // not call advance(), and must not throw (advance() is noexcept, so an
  // exception terminates).
  template <class F>
  void advance(Clock::time_point now, F&& on_expired) noexcept;

  // The earliest tick boundary at which an entry expires or moves on (start +
  // min target * tick), or nullopt if the wheel is empty. Amortized O(1): after the earliest entry
  // leaves, the next call scans the bitset from the current tick. Not callable from an on_expired
  // callback.
  std::optional<Clock::time_point> next_deadline() const;

  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Geometry, for tests and metrics.
  std::uint64_t slot_count() const { return slots_; }
  std::uint64_t current_tick() const { return current_tick_; }
  std::chrono::nanoseconds tick() const { return std::chrono::nanoseconds(tick_ns_); }

 private:
  // The tick count of `t` since start_: floor, saturating, and 0 before start_.
  std::uint64_t floor_tick(Clock::time_point t) const;
  // The offset from `from` (a slot index) of the first occupied slot among the
  // `count` slots starting there (wrapping), or `count` if none is occupied.
  std::uint64_t find_occupied(std::uint64_t from, std::uint64_t count) const;
  static constexpr std::uint32_t kNone = WheelEntry::kUnlinked;
  // A list node: the entry, and its neighbours' node indices (kNone at the
  // ends). A free node is in free_'s list through `next`.
  struct Node {
    WheelEntry* entry;
    std::uint32_t prev;
    std::uint32_t next;
  };

  // Links `e` at the front of the slot of its target_tick. Grows nodes_ when
  // no node is free (an allocation failure terminates: noexcept).
  void link(WheelEntry* e) noexcept;
  // Unlinks `e` from the slot `slot` and frees its node.
  void unlink(WheelEntry* e, std::uint64_t slot) noexcept;
  void set_bit(std::uint64_t slot) { bits_[slot / 64] |= std::uint64_t{1} << (slot % 64); }
  void clear_bit(std::uint64_t slot) { bits_[slot / 64] &= ~(std::uint64_t{1} << (slot % 64)); }

  const std::int64_t tick_ns_;
  const Clock::time_point start_;
  // Invariant: slots_ is a power of two in [2, kMaxSlots]; mask_ = slots_ - 1 is
  // also the largest distance from current_tick_ to a target.
  const std::uint64_t slots_;
  const std::uint64_t mask_;
  // Outside advance(): every linked entry has current_tick_ < target_tick <=
  // current_tick_ + mask_. Always: a linked entry is in the list of slot
  // target_tick & mask_.
  std::uint64_t current_tick_ = 0;
  // The first node of each slot's list, or kNone.
  std::vector<std::uint32_t> heads_;
  std::vector<Node> nodes_;
  std::uint32_t free_ = kNone;  // the free nodes, through Node::next
  // Invariant outside advance(): bit s is set iff slot s's list is not empty.
  std::vector<std::uint64_t> bits_;
  // During advance(), the node of the next entry of the slot being visited;
  // remove() moves it on past an entry it unlinks. kNone otherwise.
  std::uint32_t cursor_ = kNone;
  bool advancing_ = false;
  // Number of linked entries.
  std::size_t size_ = 0;
  // Invariant: if min_valid_, min_tick_ is the smallest target of any linked
  // entry. Recomputed lazily by next_deadline().
  mutable std::uint64_t min_tick_ = 0;
  mutable bool min_valid_ = false;
};

template <class F>
void TimeoutWheel::advance(Clock::time_point now, F&& on_expired) noexcept {
  SPINDLE_ASSERT(!advancing_, "TimeoutWheel::advance called from its own callback");
  const std::uint64_t prev = current_tick_;
  const std::uint64_t cur = floor_tick(now);
  if (cur <= prev) return;
  current_tick_ = cur;
  // Nothing scheduled, or nothing due yet: just move the cursor. The targets
  // still fit the window, since they were at most prev + mask_ < cur + mask_.
  if (size_ == 0 || (min_valid_ && min_tick_ > cur)) return;

  advancing_ = true;
  // Visit ticks prev + 1 .. cur in order; after a full revolution or more that
  // is every slot once, starting with the oldest tick (prev + 1 + offset).
  const std::uint64_t count = cur - prev < slots_ ? cur - prev : slots_;
  const std::uint64_t first = (prev + 1) & mask_;
  std::uint64_t offset = 0;
  while (offset < count && size_ != 0) {
    offset += find_occupied((first + offset) & mask_, count - offset);
    if (offset >= count) break;
    const std::uint64_t slot = (first + offset) & mask_;
    const std::uint64_t slot_tick = prev + 1 + offset;  // the tick this visit stands for
    ++offset;
    // The slot holds this tick's entries and, already linked in front of the
    // cursor or left in place, entries of later ticks (targets after cur):
    // those stay. An entry of this tick held at an earlier horizon, or moved
    // on earlier in this call, goes on to its deadline's slot or to the new
    // horizon. A deadline's slot that this call still visits takes it in tick
    // order; past the ticks it visits (a jump of more than a revolution) it
    // expires now, as late as the rest of such a jump.
    cursor_ = heads_[slot];
    while (cursor_ != kNone) {
      WheelEntry* e = nodes_[cursor_].entry;
      cursor_ = nodes_[cursor_].next;
      if (e->target_tick > cur) continue;
      SPINDLE_DCHECK(e->target_tick == slot_tick);
      unlink(e, slot);
      const std::uint64_t target = std::min(e->deadline_tick, cur + mask_);
      if (e->deadline_tick <= slot_tick || (target <= cur && target >= prev + 1 + count)) {
        --size_;
        on_expired(e);
      } else {
        e->target_tick = target;
        link(e);
      }
    }
    if (heads_[slot] == kNone) clear_bit(slot);
  }
  advancing_ = false;
  if (min_valid_ && min_tick_ <= cur) min_valid_ = false;
}

}  // namespace spindle::detail
