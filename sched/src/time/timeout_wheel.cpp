#include "time/timeout_wheel.hpp"

#include <algorithm>
#include <bit>
#include <limits>
#include <stdexcept>
#include <string>

namespace spindle::detail {
namespace {

// ceil(horizon / tick) + 1 for positive arguments, without overflow.
std::uint64_t needed_slots(std::int64_t tick_ns, std::int64_t horizon_ns) {
  return static_cast<std::uint64_t>((horizon_ns - 1) / tick_ns + 1) + 1;
}

// a - b in nanoseconds, saturating at the int64 limits.
std::int64_t saturating_diff(Clock::time_point a, Clock::time_point b) {
  const std::int64_t x = std::chrono::nanoseconds(a.time_since_epoch()).count();
  const std::int64_t y = std::chrono::nanoseconds(b.time_since_epoch()).count();
  std::int64_t d = 0;
  if (__builtin_sub_overflow(x, y, &d)) {
    return x > y ? std::numeric_limits<std::int64_t>::max()
                 : std::numeric_limits<std::int64_t>::min();
  }
  return d;
}

}  // namespace

void TimeoutWheel::validate(std::chrono::nanoseconds tick, std::chrono::nanoseconds horizon) {
  if (tick.count() <= 0) {
    throw std::invalid_argument("spindle::Config: timeout_wheel_tick must be positive");
  }
  if (horizon.count() <= 0) {
    throw std::invalid_argument(
        "spindle::Config: the timeout wheel horizon (max of connect_timeout and "
        "read_write_timeout) must be positive");
  }
  const std::uint64_t needed = needed_slots(tick.count(), horizon.count());
  if (needed > kMaxSlots) {
    throw std::invalid_argument("spindle::Config: a horizon of " + std::to_string(horizon.count()) +
                                " ns over timeout_wheel_tick (" + std::to_string(tick.count()) +
                                " ns) needs " + std::to_string(needed) +
                                " timing wheel slots, more than " + std::to_string(kMaxSlots) +
                                "; raise timeout_wheel_tick");
  }
}

TimeoutWheel::TimeoutWheel(std::chrono::nanoseconds tick, std::chrono::nanoseconds horizon,
                           Clock::time_point start)
    : tick_ns_((validate(tick, horizon), tick.count())),
      start_(start),
      slots_(std::bit_ceil(needed_slots(tick.count(), horizon.count()))),
      mask_(slots_ - 1),
      heads_(slots_, kNone),
      bits_((slots_ + 63) / 64, 0) {}

std::uint64_t TimeoutWheel::floor_tick(Clock::time_point t) const {
  const std::int64_t d = saturating_diff(t, start_);
  return d <= 0 ? 0 : static_cast<std::uint64_t>(d / tick_ns_);
}

void TimeoutWheel::link(WheelEntry* e) noexcept {
  const std::uint64_t slot = e->target_tick & mask_;
  std::uint32_t n = free_;
  if (n != kNone) {
    free_ = nodes_[n].next;
  } else {
    n = static_cast<std::uint32_t>(nodes_.size());
    SPINDLE_ASSERT(n != kNone, "TimeoutWheel: more entries than node indices");
    nodes_.push_back({});
  }
  const std::uint32_t head = heads_[slot];
  nodes_[n] = {e, kNone, head};
  if (head != kNone) nodes_[head].prev = n;
  heads_[slot] = n;
  e->node = n;
  set_bit(slot);
}

void TimeoutWheel::unlink(WheelEntry* e, std::uint64_t slot) noexcept {
  const std::uint32_t n = e->node;
  Node& x = nodes_[n];
  if (x.prev != kNone) {
    nodes_[x.prev].next = x.next;
  } else {
    heads_[slot] = x.next;
  }
  if (x.next != kNone) nodes_[x.next].prev = x.prev;
  x.next = free_;
  free_ = n;
  e->node = WheelEntry::kUnlinked;
}

void TimeoutWheel::insert(WheelEntry* e, Clock::time_point deadline) noexcept {
  SPINDLE_ASSERT(!e->linked(), "TimeoutWheel::insert: entry already linked");
  const std::int64_t d = saturating_diff(deadline, start_);
  // ceil(d / tick) for d > 0; a deadline at or before start maps to tick 0.
  const std::uint64_t ceil_tick = d <= 0 ? 0 : static_cast<std::uint64_t>((d - 1) / tick_ns_) + 1;
  e->deadline_tick = std::max(ceil_tick, current_tick_ + 1);
  const std::uint64_t target = std::min(e->deadline_tick, current_tick_ + mask_);
  e->target_tick = target;
  link(e);
  if (size_ == 0) {
    min_tick_ = target;
    min_valid_ = true;
  } else if (min_valid_ && target < min_tick_) {
    min_tick_ = target;
  }
  ++size_;
}

void TimeoutWheel::remove(WheelEntry* e) noexcept {
  if (!e->linked()) return;
  const std::uint64_t slot = e->target_tick & mask_;
  if (e->node == cursor_) cursor_ = nodes_[cursor_].next;
  unlink(e, slot);
  const bool emptied = heads_[slot] == kNone;
  if (emptied) clear_bit(slot);
  --size_;
  // Every entry of a slot has the same target, so the minimum only moves when
  // its slot empties.
  if (min_valid_ && e->target_tick == min_tick_ && emptied) min_valid_ = false;
}

std::uint64_t TimeoutWheel::find_occupied(std::uint64_t from, std::uint64_t count) const {
  std::uint64_t scanned = 0;
  std::uint64_t pos = from;
  while (scanned < count) {
    const std::uint64_t bit = pos % 64;
    // Look at most to the end of this word, the end of the ring, and the end
    // of the range (a ring smaller than 64 slots uses part of one word).
    const std::uint64_t chunk = std::min({64 - bit, slots_ - pos, count - scanned});
    std::uint64_t word = bits_[pos / 64] >> bit;
    if (chunk < 64) word &= (std::uint64_t{1} << chunk) - 1;
    if (word != 0) return scanned + static_cast<std::uint64_t>(std::countr_zero(word));
    scanned += chunk;
    pos = (pos + chunk) & mask_;
  }
  return count;
}

std::optional<Clock::time_point> TimeoutWheel::next_deadline() const {
  SPINDLE_ASSERT(!advancing_, "TimeoutWheel::next_deadline called from an on_expired callback");
  if (size_ == 0) return std::nullopt;
  if (!min_valid_) {
    // Targets lie in (current_tick_, current_tick_ + mask_], one tick per slot.
    const std::uint64_t first = (current_tick_ + 1) & mask_;
    const std::uint64_t offset = find_occupied(first, mask_);
    SPINDLE_ASSERT(offset < mask_, "TimeoutWheel: entries counted but no slot occupied");
    const WheelEntry* head = nodes_[heads_[(first + offset) & mask_]].entry;
    SPINDLE_DCHECK(head->target_tick == current_tick_ + 1 + offset);
    min_tick_ = head->target_tick;
    min_valid_ = true;
  }
  return start_ + std::chrono::duration_cast<Clock::duration>(
                      std::chrono::nanoseconds(static_cast<std::int64_t>(min_tick_) * tick_ns_));
}

}  // namespace spindle::detail
