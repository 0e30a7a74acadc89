// TimeoutWheel: tick math, clamping, exactly-once expiry, O(1) removal,
// wraparound, callbacks that reenter the wheel, and the geometry limits.
#include "time/timeout_wheel.hpp"

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace spindle::detail {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

const Clock::time_point kStart = Clock::time_point(std::chrono::seconds(1000));

Clock::time_point at_us(std::int64_t us) { return kStart + microseconds(us); }
Clock::time_point at_ms(std::int64_t ms) { return kStart + milliseconds(ms); }

// An operation record with an embedded entry, as the driver will have.
struct Op {
  WheelEntry entry;
  int id = 0;
  int fired = 0;
  std::uint64_t fired_at_tick = 0;
};

Op* op_of(WheelEntry* e) {
  return reinterpret_cast<Op*>(reinterpret_cast<char*>(e) - offsetof(Op, entry));
}

// Advances and returns the ids that expired, in order. Callbacks use CHECK, not
// REQUIRE: advance() is noexcept, so a throwing assertion would terminate.
std::vector<int> advance_ids(TimeoutWheel& w, Clock::time_point now) {
  std::vector<int> ids;
  w.advance(now, [&](WheelEntry* e) {
    CHECK_FALSE(e->linked());
    Op* op = op_of(e);
    ++op->fired;
    op->fired_at_tick = w.current_tick();
    ids.push_back(op->id);
  });
  return ids;
}

// 1 ms ticks, 100 ms horizon: ceil(100) + 1 = 101 -> 128 slots.
TimeoutWheel small_wheel() { return TimeoutWheel(milliseconds(1), milliseconds(100), kStart); }

TEST_CASE("timeout wheel: slot count is the next power of two of ticks + 1", "[timeout_wheel]") {
  REQUIRE(TimeoutWheel(milliseconds(1), milliseconds(100), kStart).slot_count() == 128);
  REQUIRE(TimeoutWheel(milliseconds(1), milliseconds(127), kStart).slot_count() == 128);
  REQUIRE(TimeoutWheel(milliseconds(1), milliseconds(128), kStart).slot_count() == 256);
  REQUIRE(TimeoutWheel(milliseconds(1), microseconds(126'001), kStart).slot_count() == 128);
  REQUIRE(TimeoutWheel(milliseconds(1), milliseconds(1), kStart).slot_count() == 2);
  // The runtime's defaults: 5 ms tick, 60 s horizon -> 12001 -> 16384.
  REQUIRE(TimeoutWheel(milliseconds(5), std::chrono::seconds(60), kStart).slot_count() == 16384);
}

TEST_CASE("timeout wheel: a deadline maps to the first tick boundary at or after it",
          "[timeout_wheel]") {
  TimeoutWheel w = small_wheel();
  Op a, b, c;
  w.insert(&a.entry, at_us(2500));
  w.insert(&b.entry, at_ms(3));
  w.insert(&c.entry, at_us(3001));
  REQUIRE(a.entry.target_tick == 3);
  REQUIRE(b.entry.target_tick == 3);
  REQUIRE(c.entry.target_tick == 4);
  REQUIRE(w.size() == 3);
  REQUIRE(w.next_deadline() == at_ms(3));
}

TEST_CASE("timeout wheel: past deadlines go to the next tick, far ones wait at the horizon",
          "[timeout_wheel]") {
  TimeoutWheel w = small_wheel();
  REQUIRE(advance_ids(w, at_us(10'500)).empty());
  REQUIRE(w.current_tick() == 10);
  Op past, before_start, now_op, far, very_far, at_edge;
  far.id = 1;
  at_edge.id = 2;
  w.insert(&past.entry, at_ms(1));
  w.insert(&before_start.entry, kStart - std::chrono::hours(1));
  w.insert(&now_op.entry, at_us(10'500));
  w.insert(&far.entry, at_ms(1'000));
  w.insert(&very_far.entry, Clock::time_point::max());
  w.insert(&at_edge.entry, at_ms(10 + 127));
  REQUIRE(past.entry.target_tick == 11);
  REQUIRE(before_start.entry.target_tick == 11);
  REQUIRE(now_op.entry.target_tick == 11);
  REQUIRE(far.entry.target_tick == 10 + 127);
  REQUIRE(far.entry.deadline_tick == 1'000);
  REQUIRE(very_far.entry.target_tick == 10 + 127);
  REQUIRE(at_edge.entry.target_tick == 10 + 127);

  // A past deadline fires at the first advance that reaches the next tick.
  REQUIRE(advance_ids(w, at_us(10'999)).empty());
  REQUIRE(w.next_deadline() == at_ms(11));
  REQUIRE(advance_ids(w, at_ms(11)).size() == 3);
  REQUIRE(past.fired == 1);
  REQUIRE(before_start.fired == 1);
  REQUIRE(now_op.fired == 1);
  REQUIRE(w.next_deadline() == at_ms(137));
  // At the horizon only the entry due there expires; the far ones move on.
  REQUIRE(advance_ids(w, at_ms(137)) == std::vector<int>{2});
  REQUIRE(far.entry.linked());
  REQUIRE(far.entry.target_tick == 137 + 127);
  REQUIRE(w.next_deadline() == at_ms(137 + 127));
  // far expires at its own tick, after more moves, and not a tick before.
  for (std::int64_t ms = 138; ms < 1'000; ms += 7) REQUIRE(advance_ids(w, at_ms(ms)).empty());
  REQUIRE(advance_ids(w, at_us(999'999)).empty());
  REQUIRE(advance_ids(w, at_ms(1'000)) == std::vector<int>{1});
  REQUIRE(far.fired == 1);
  // very_far is still waiting: only removal ends it.
  REQUIRE(very_far.entry.linked());
  REQUIRE(very_far.fired == 0);
  w.remove(&very_far.entry);
  REQUIRE(w.empty());
}

TEST_CASE("timeout wheel: a held entry due within one late advance expires in tick order",
          "[timeout_wheel]") {
  TimeoutWheel w = small_wheel();  // 128 slots: the horizon is 127 ticks ahead
  Op held, between;
  held.id = 1;
  between.id = 2;
  w.insert(&held.entry, at_ms(129));  // held at 127
  REQUIRE(advance_ids(w, at_ms(100)).empty());
  w.insert(&between.entry, at_ms(128));
  // One advance over 127, 128 and 129: 128's entry first, then the held one.
  REQUIRE(advance_ids(w, at_ms(130)) == std::vector<int>{2, 1});
  REQUIRE(held.fired_at_tick == 130);
  REQUIRE(w.empty());
}

TEST_CASE("timeout wheel: an entry expires once, at its tick and not before", "[timeout_wheel]") {
  TimeoutWheel w = small_wheel();
  Op op;
  op.id = 7;
  w.insert(&op.entry, at_us(5500));
  REQUIRE(op.entry.linked());
  REQUIRE(advance_ids(w, at_ms(5)).empty());
  REQUIRE(advance_ids(w, at_us(5999)).empty());
  REQUIRE(op.fired == 0);
  REQUIRE(advance_ids(w, at_ms(6)) == std::vector<int>{7});
  REQUIRE(op.fired == 1);
  REQUIRE_FALSE(op.entry.linked());
  REQUIRE(w.empty());
  REQUIRE(advance_ids(w, at_ms(7)).empty());
  REQUIRE(advance_ids(w, at_ms(500)).empty());
  REQUIRE(op.fired == 1);
}

TEST_CASE("timeout wheel: a late advance expires everything due, in tick order",
          "[timeout_wheel]") {
  TimeoutWheel w = small_wheel();
  std::vector<Op> ops(5);
  const int ms[] = {40, 3, 20, 3, 90};
  for (int i = 0; i < 5; ++i) {
    ops[i].id = i;
    w.insert(&ops[i].entry, at_ms(ms[i]));
  }
  auto ids = advance_ids(w, at_ms(50));
  REQUIRE(ids.size() == 4);
  // Ticks 3, 3, 20, 40; within a tick the order is unspecified.
  REQUIRE(((ids[0] == 1 && ids[1] == 3) || (ids[0] == 3 && ids[1] == 1)));
  REQUIRE(ids[2] == 2);
  REQUIRE(ids[3] == 0);
  REQUIRE(w.size() == 1);
  REQUIRE(w.next_deadline() == at_ms(90));
}

TEST_CASE("timeout wheel: remove unlinks in O(1) and the entry never expires", "[timeout_wheel]") {
  TimeoutWheel w = small_wheel();
  // Five entries in one slot: remove the middle, the first and the last linked.
  std::vector<Op> ops(5);
  for (int i = 0; i < 5; ++i) {
    ops[i].id = i;
    w.insert(&ops[i].entry, at_ms(8));
  }
  w.remove(&ops[2].entry);
  w.remove(&ops[4].entry);  // the list head (inserted last)
  w.remove(&ops[0].entry);  // the list tail
  REQUIRE(w.size() == 2);
  for (int i : {0, 2, 4}) REQUIRE_FALSE(ops[i].entry.linked());
  // Removing an entry that is not linked is a no-op.
  w.remove(&ops[2].entry);
  REQUIRE(w.size() == 2);
  auto ids = advance_ids(w, at_ms(8));
  std::sort(ids.begin(), ids.end());
  REQUIRE(ids == std::vector<int>{1, 3});
  for (int i : {0, 2, 4}) REQUIRE(ops[i].fired == 0);
  // And after expiry, remove is still a no-op.
  w.remove(&ops[1].entry);
  REQUIRE(w.empty());

  // An emptied wheel can be reused; an entry can be reinserted after removal.
  w.insert(&ops[0].entry, at_ms(9));
  w.remove(&ops[0].entry);
  REQUIRE(w.empty());
  REQUIRE_FALSE(w.next_deadline().has_value());
  w.insert(&ops[0].entry, at_ms(12));
  REQUIRE(advance_ids(w, at_ms(12)) == std::vector<int>{0});
}

TEST_CASE("timeout wheel: ranges wrap around the end of the ring", "[timeout_wheel]") {
  TimeoutWheel w = small_wheel();
  REQUIRE(advance_ids(w, at_ms(120)).empty());
  Op a, b, c;
  a.id = 1;
  b.id = 2;
  c.id = 3;
  w.insert(&a.entry, at_ms(125));  // slot 125
  w.insert(&b.entry, at_ms(130));  // slot 2
  w.insert(&c.entry, at_ms(200));  // slot 72
  REQUIRE(b.entry.target_tick == 130);
  REQUIRE(advance_ids(w, at_ms(126)) == std::vector<int>{1});
  REQUIRE(w.next_deadline() == at_ms(130));
  REQUIRE(advance_ids(w, at_ms(129)).empty());
  REQUIRE(advance_ids(w, at_ms(131)) == std::vector<int>{2});
  REQUIRE(w.next_deadline() == at_ms(200));
  REQUIRE(advance_ids(w, at_ms(200)) == std::vector<int>{3});
}

TEST_CASE("timeout wheel: a jump of a revolution or more drains every slot", "[timeout_wheel]") {
  TimeoutWheel w = small_wheel();
  REQUIRE(advance_ids(w, at_ms(50)).empty());
  std::vector<Op> ops(127);
  for (int i = 0; i < 127; ++i) {
    ops[i].id = i;
    w.insert(&ops[i].entry, at_ms(51 + i));  // one per tick, every slot but one
  }
  const std::int64_t jump = GENERATE(127, 128, 129, 1000, 1'000'000);
  CAPTURE(jump);
  auto ids = advance_ids(w, at_ms(50 + jump));
  REQUIRE(ids.size() == 127);
  for (int i = 0; i < 127; ++i) REQUIRE(ids[i] == i);  // in tick order
  REQUIRE(w.empty());
  REQUIRE_FALSE(w.next_deadline().has_value());
  // The cursor moved: a new entry is relative to the new current tick.
  Op late;
  w.insert(&late.entry, at_ms(0));
  REQUIRE(late.entry.target_tick == static_cast<std::uint64_t>(50 + jump + 1));
}

TEST_CASE("timeout wheel: an empty wheel only moves its cursor", "[timeout_wheel]") {
  TimeoutWheel w = small_wheel();
  REQUIRE(advance_ids(w, at_ms(1'000'000)).empty());
  REQUIRE(w.current_tick() == 1'000'000);
  // Time never runs backwards.
  REQUIRE(advance_ids(w, at_ms(5)).empty());
  REQUIRE(w.current_tick() == 1'000'000);
  REQUIRE(advance_ids(w, kStart - std::chrono::hours(1)).empty());
  REQUIRE(w.current_tick() == 1'000'000);
}

TEST_CASE("timeout wheel: next_deadline follows inserts, removals and expiry", "[timeout_wheel]") {
  TimeoutWheel w = small_wheel();
  REQUIRE_FALSE(w.next_deadline().has_value());
  Op a, b, c, d;
  w.insert(&a.entry, at_ms(30));
  REQUIRE(w.next_deadline() == at_ms(30));
  w.insert(&b.entry, at_ms(10));
  REQUIRE(w.next_deadline() == at_ms(10));
  w.insert(&c.entry, at_ms(20));
  REQUIRE(w.next_deadline() == at_ms(10));
  w.insert(&d.entry, at_us(9500));  // same tick as b
  w.remove(&b.entry);
  REQUIRE(w.next_deadline() == at_ms(10));  // d is still there
  w.remove(&d.entry);
  REQUIRE(w.next_deadline() == at_ms(20));
  REQUIRE(advance_ids(w, at_ms(25)).size() == 1);
  REQUIRE(w.next_deadline() == at_ms(30));
  w.remove(&a.entry);
  REQUIRE_FALSE(w.next_deadline().has_value());
  REQUIRE(w.empty());
  // Deadlines far from the cursor in a multi-word bitset.
  TimeoutWheel big(milliseconds(1), std::chrono::seconds(10), kStart);  // 16384 slots
  REQUIRE(advance_ids(big, at_ms(16'000)).empty());
  Op e, f;
  big.insert(&e.entry, at_ms(16'000 + 9'000));  // both past the ring's end
  big.insert(&f.entry, at_ms(16'000 + 5'000));
  REQUIRE(big.next_deadline() == at_ms(21'000));
  big.remove(&f.entry);
  REQUIRE(big.next_deadline() == at_ms(25'000));
}

TEST_CASE("timeout wheel: callbacks may insert into and remove from the slot being drained",
          "[timeout_wheel]") {
  TimeoutWheel w = small_wheel();
  Op a, b, c, later, ahead;
  a.id = 1;
  b.id = 2;
  c.id = 3;
  later.id = 4;
  ahead.id = 5;
  // a, b, c all at tick 5 (slot 5).
  w.insert(&a.entry, at_ms(5));
  w.insert(&b.entry, at_ms(5));
  w.insert(&c.entry, at_ms(5));
  int calls = 0;
  // Advance from tick 0 to tick 10. The first expiry removes the other two
  // entries of its slot, re-inserts one of them (clamped to tick 10 + 127 =
  // 137, which is slot 9: in the range still to visit), and inserts `later`
  // at tick 133, which is slot 5 itself.
  w.advance(at_ms(10), [&](WheelEntry* e) {
    ++calls;
    ++op_of(e)->fired;
    if (calls == 1) {
      Op* first = op_of(e);
      Op* others[2];
      int k = 0;
      for (Op* o : {&a, &b, &c}) {
        if (o != first) others[k++] = o;
      }
      CHECK(others[0]->entry.linked());
      CHECK(others[1]->entry.linked());
      w.remove(&others[0]->entry);
      w.remove(&others[1]->entry);
      w.insert(&others[1]->entry, at_ms(100'000));
      CHECK(others[1]->entry.target_tick == 137);
      w.insert(&later.entry, at_ms(133));
      CHECK(later.entry.target_tick == 133);
      CHECK((later.entry.target_tick & 127) == 5);
      w.insert(&ahead.entry, at_ms(8));  // in the past now: tick 11
      CHECK(ahead.entry.target_tick == 11);
    }
  });
  REQUIRE(calls == 1);
  REQUIRE(a.fired + b.fired + c.fired == 1);
  REQUIRE(w.size() == 3);
  REQUIRE(w.next_deadline() == at_ms(11));
  REQUIRE(advance_ids(w, at_ms(11)) == std::vector<int>{5});
  REQUIRE(advance_ids(w, at_ms(132)).empty());
  REQUIRE(advance_ids(w, at_ms(133)) == std::vector<int>{4});
  // Held at tick 137, the horizon when it was inserted; its deadline is far
  // beyond, so it moves on instead of expiring.
  REQUIRE(advance_ids(w, at_ms(137)).empty());
  REQUIRE(w.size() == 1);
  REQUIRE(advance_ids(w, at_ms(99'999)).empty());
  REQUIRE(advance_ids(w, at_ms(100'000)).size() == 1);
  REQUIRE(a.fired + b.fired + c.fired == 2);
  REQUIRE(w.empty());
}

TEST_CASE("timeout wheel: a callback may re-arm the entry it was given", "[timeout_wheel]") {
  TimeoutWheel w = small_wheel();
  Op op;
  w.insert(&op.entry, at_ms(1));
  int fired = 0;
  for (std::int64_t t = 1; t <= 50; ++t) {
    w.advance(at_ms(t), [&](WheelEntry* e) {
      ++fired;
      w.insert(e, at_ms(t));  // due now: expires at the next tick
    });
    REQUIRE(fired == t);
  }
  REQUIRE(w.size() == 1);
}

TEST_CASE("timeout wheel: 100k random deadlines each expire once, in tick order, on time",
          "[timeout_wheel]") {
  // 1 ms ticks, 1 s horizon: 1001 -> 1024 slots, a 16-word bitset.
  TimeoutWheel w(milliseconds(1), std::chrono::seconds(1), kStart);
  const std::uint64_t mask = w.slot_count() - 1;
  constexpr int kOps = 100'000;
  auto ops = std::make_unique<Op[]>(kOps);
  std::mt19937_64 rng(12345);
  std::vector<std::uint64_t> expected_tick(kOps, 0);
  std::vector<bool> removed(kOps, false);

  std::int64_t now_us = 0;
  std::uint64_t last_fired_tick = 0;
  std::uint64_t prev_tick = 0;
  int next = 0;
  int fired = 0;
  int removals = 0;
  bool order_ok = true;
  bool timing_ok = true;
  while (next < kOps || !w.empty()) {
    // Insert a batch with deadlines from 1 ms in the past to 1.5 s ahead
    // (beyond the horizon: held there).
    const int batch = static_cast<int>(rng() % 400);
    for (int i = 0; i < batch && next < kOps; ++i, ++next) {
      Op& op = ops[next];
      op.id = next;
      const std::int64_t deadline_us = now_us - 1000 + static_cast<std::int64_t>(rng() % 1'501'000);
      w.insert(&op.entry, at_us(deadline_us));
      const std::int64_t ceil_tick = deadline_us <= 0 ? 0 : (deadline_us + 999) / 1000;
      const std::uint64_t cur = w.current_tick();
      expected_tick[next] = std::max<std::uint64_t>(
          static_cast<std::uint64_t>(std::max<std::int64_t>(ceil_tick, 0)), cur + 1);
      REQUIRE(op.entry.deadline_tick == expected_tick[next]);
      REQUIRE(op.entry.target_tick == std::min(expected_tick[next], cur + mask));
      // Cancel about 10% right away or a little later.
      if (rng() % 10 == 0) {
        w.remove(&op.entry);
        removed[next] = true;
        ++removals;
      }
    }
    if (next > 0 && rng() % 4 == 0) {
      const int victim = static_cast<int>(rng() % static_cast<std::uint64_t>(next));
      if (ops[victim].entry.linked()) {
        w.remove(&ops[victim].entry);
        removed[victim] = true;
        ++removals;
      }
    }
    if (auto nd = w.next_deadline())
      REQUIRE(*nd >= at_ms(static_cast<std::int64_t>(prev_tick) + 1));
    // Advance by a random step, sometimes several ticks at once.
    now_us += static_cast<std::int64_t>(rng() % 4000);
    w.advance(at_us(now_us), [&](WheelEntry* e) {
      Op* op = op_of(e);
      ++op->fired;
      ++fired;
      const std::uint64_t target = expected_tick[static_cast<std::size_t>(op->id)];
      if (target < last_fired_tick) order_ok = false;
      last_fired_tick = target;
      // Due at this advance, and not due at the previous one.
      if (target > w.current_tick() || target <= prev_tick) timing_ok = false;
    });
    prev_tick = w.current_tick();
  }
  REQUIRE(order_ok);
  REQUIRE(timing_ok);
  REQUIRE(fired + removals == kOps);
  int wrong = 0;
  for (int i = 0; i < kOps; ++i) {
    if (ops[i].fired != (removed[i] ? 0 : 1)) ++wrong;
  }
  REQUIRE(wrong == 0);
}

TEST_CASE("timeout wheel: the geometry limit is 2^20 slots", "[timeout_wheel]") {
  constexpr std::int64_t kMax = std::int64_t{1} << 20;
  // ceil(h / t) + 1 == 2^20: accepted, and the wheel has exactly 2^20 slots.
  REQUIRE_NOTHROW(TimeoutWheel::validate(nanoseconds(1), nanoseconds(kMax - 1)));
  REQUIRE_NOTHROW(TimeoutWheel::validate(milliseconds(5), milliseconds(5 * (kMax - 1))));
  TimeoutWheel biggest(nanoseconds(1), nanoseconds(kMax - 1), kStart);
  REQUIRE(biggest.slot_count() == static_cast<std::uint64_t>(kMax));
  Op op;
  biggest.insert(&op.entry, Clock::time_point::max());
  REQUIRE(op.entry.target_tick == static_cast<std::uint64_t>(kMax - 1));
  REQUIRE(biggest.next_deadline() == kStart + nanoseconds(kMax - 1));
  // ceil(h / t) + 1 == 2^20 + 1: rejected, by validate() and by the constructor.
  REQUIRE_THROWS_AS(TimeoutWheel::validate(nanoseconds(1), nanoseconds(kMax)),
                    std::invalid_argument);
  REQUIRE_THROWS_AS(TimeoutWheel::validate(milliseconds(5), milliseconds(5 * kMax - 4)),
                    std::invalid_argument);
  REQUIRE_THROWS_AS(TimeoutWheel(nanoseconds(1), nanoseconds(kMax), kStart), std::invalid_argument);
  try {
    TimeoutWheel::validate(nanoseconds(1), nanoseconds(kMax));
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    REQUIRE(std::string(e.what()).find("timeout_wheel_tick") != std::string::npos);
  }
  // Non-positive tick or horizon.
  REQUIRE_THROWS_AS(TimeoutWheel::validate(nanoseconds(0), milliseconds(1)), std::invalid_argument);
  REQUIRE_THROWS_AS(TimeoutWheel::validate(nanoseconds(-1), milliseconds(1)),
                    std::invalid_argument);
  REQUIRE_THROWS_AS(TimeoutWheel::validate(milliseconds(1), nanoseconds(0)), std::invalid_argument);
}

TEST_CASE("timeout wheel: the smallest wheel (two slots) still works", "[timeout_wheel]") {
  TimeoutWheel w(milliseconds(1), milliseconds(1), kStart);
  REQUIRE(w.slot_count() == 2);
  Op a, b;
  a.id = 1;
  b.id = 2;
  w.insert(&a.entry, at_ms(50));  // held at tick 1, the horizon
  REQUIRE(a.entry.target_tick == 1);
  REQUIRE(advance_ids(w, at_ms(1)).empty());
  REQUIRE(a.entry.target_tick == 2);
  REQUIRE(advance_ids(w, at_ms(49)).empty());
  REQUIRE(advance_ids(w, at_ms(50)) == std::vector<int>{1});
  w.insert(&b.entry, at_ms(0));
  REQUIRE(b.entry.target_tick == 51);
  REQUIRE(w.next_deadline() == at_ms(51));
  REQUIRE(advance_ids(w, at_ms(59)) == std::vector<int>{2});
}

TEST_CASE("timeout wheel: extreme time points saturate instead of overflowing", "[timeout_wheel]") {
  TimeoutWheel w = small_wheel();
  Op a, b;
  a.id = 1;
  b.id = 2;
  w.insert(&a.entry, Clock::time_point::min());
  w.insert(&b.entry, Clock::time_point::max());
  REQUIRE(a.entry.target_tick == 1);
  REQUIRE(b.entry.target_tick == 127);
  // The latest time point is not on a tick boundary: b's deadline rounds up
  // to the tick after it, which no clock reading reaches, so b stays held.
  auto ids = advance_ids(w, Clock::time_point::max());
  REQUIRE(ids == std::vector<int>{1});
  REQUIRE(w.size() == 1);
  REQUIRE(b.entry.target_tick == w.current_tick() + 1);
  w.remove(&b.entry);
  REQUIRE(w.empty());
}

}  // namespace
}  // namespace spindle::detail
