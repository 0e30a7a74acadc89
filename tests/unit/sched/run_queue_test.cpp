// RunQueue: FIFO order, batch pops, length, overflow batches, steal sizes (both
// roundings), and a multi-thread run checking every item comes out exactly once.
#include "core/run_queue.hpp"

#include <atomic>
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

namespace spindle::detail {
namespace {

struct Item {
  std::uint32_t id = 0;
};

using Queue = RunQueue<Item>;
constexpr std::uint32_t kCap = Queue::kCapacity;

std::vector<Item> make_items(std::size_t n) {
  std::vector<Item> items(n);
  for (std::size_t i = 0; i < n; ++i) items[i].id = static_cast<std::uint32_t>(i);
  return items;
}

// An overflow callback that must not run.
auto no_overflow() {
  return [](Item**, std::size_t) { FAIL("unexpected overflow"); };
}

TEST_CASE("run queue: owner push and pop are FIFO", "[run_queue]") {
  Queue q;
  auto items = make_items(10);
  for (auto& it : items) q.push_back(&it, no_overflow());
  for (auto& it : items) REQUIRE(q.pop() == &it);
  REQUIRE(q.pop() == nullptr);
  REQUIRE(q.empty());
}

TEST_CASE("run queue: pop_batch takes the oldest, at most half rounded up", "[run_queue]") {
  Queue q;
  auto items = make_items(20);
  for (auto& it : items) q.push_back(&it, no_overflow());
  Item* out[16] = {};
  REQUIRE(q.pop_batch(out, 8) == 8);  // 20 queued: capped by max
  for (int i = 0; i < 8; ++i) REQUIRE(out[i] == &items[i]);
  REQUIRE(q.len() == 12);
  REQUIRE(q.pop_batch(out, 16) == 6);  // 12 queued: half stays for thieves
  for (int i = 0; i < 6; ++i) REQUIRE(out[i] == &items[8 + i]);
  Queue thief;
  REQUIRE(q.steal_into(thief) == &items[16]);  // takes 14..16, returns the newest
  REQUIRE(q.pop_batch(out, 16) == 2);          // 3 queued: 2 (rounded up)
  REQUIRE(q.pop_batch(out + 2, 16) == 1);
  for (int i = 0; i < 3; ++i) REQUIRE(out[i] == &items[17 + i]);
  REQUIRE(q.pop_batch(out, 16) == 0);
  REQUIRE(thief.pop() == &items[14]);
  REQUIRE(thief.pop() == &items[15]);
  REQUIRE(thief.pop() == nullptr);
}

TEST_CASE("run queue: FIFO across many laps of the ring", "[run_queue]") {
  Queue q;
  auto items = make_items(kCap * 5 + 17);
  std::size_t popped = 0;
  // Keep between 100 and 200 items queued so head and tail wrap several times.
  for (std::size_t i = 0; i < items.size(); ++i) {
    q.push_back(&items[i], no_overflow());
    if (q.len() >= 200) {
      while (q.len() > 100) REQUIRE(q.pop() == &items[popped++]);
    }
  }
  while (Item* it = q.pop()) REQUIRE(it == &items[popped++]);
  REQUIRE(popped == items.size());
}

TEST_CASE("run queue: len, empty and is_stealable", "[run_queue]") {
  Queue q;
  auto items = make_items(kCap);
  REQUIRE(q.len() == 0);
  REQUIRE(q.empty());
  REQUIRE_FALSE(q.is_stealable());
  q.push_back(&items[0], no_overflow());
  REQUIRE(q.len() == 1);
  REQUIRE_FALSE(q.empty());
  REQUIRE_FALSE(q.is_stealable());
  q.push_back(&items[1], no_overflow());
  REQUIRE(q.len() == 2);
  REQUIRE(q.is_stealable());
  for (std::uint32_t i = 2; i < kCap; ++i) q.push_back(&items[i], no_overflow());
  REQUIRE(q.len() == kCap);
  REQUIRE(q.pop() == &items[0]);
  REQUIRE(q.len() == kCap - 1);
}

TEST_CASE("run queue: a full push hands the oldest half plus the new item to overflow",
          "[run_queue]") {
  Queue q;
  auto items = make_items(kCap + 1);
  for (std::uint32_t i = 0; i < kCap; ++i) q.push_back(&items[i], no_overflow());
  REQUIRE(q.len() == kCap);

  int calls = 0;
  std::vector<Item*> moved;
  q.push_back(&items[kCap], [&](Item** batch, std::size_t n) {
    ++calls;
    moved.assign(batch, batch + n);
  });
  REQUIRE(calls == 1);
  REQUIRE(moved.size() == kCap / 2 + 1);
  for (std::uint32_t i = 0; i < kCap / 2; ++i) REQUIRE(moved[i] == &items[i]);
  REQUIRE(moved.back() == &items[kCap]);

  // The queue keeps the newest half, still in order.
  REQUIRE(q.len() == kCap / 2);
  for (std::uint32_t i = kCap / 2; i < kCap; ++i) REQUIRE(q.pop() == &items[i]);
  REQUIRE(q.pop() == nullptr);
}

TEST_CASE("run queue: the queue accepts pushes again after an overflow", "[run_queue]") {
  Queue q;
  auto items = make_items(3 * kCap);
  std::vector<int> seen(items.size(), 0);
  int batches = 0;
  auto sink = [&](Item** batch, std::size_t n) {
    ++batches;
    REQUIRE(n == kCap / 2 + 1);
    // Oldest first, the pushed item last.
    for (std::size_t i = 0; i + 1 < n; ++i) REQUIRE(batch[i]->id < batch[i + 1]->id);
    for (std::size_t i = 0; i < n; ++i) ++seen[batch[i]->id];
  };
  for (auto& it : items) q.push_back(&it, sink);
  // Pushes 257, 386, 515 and 644 (1-based) overflow: each leaves 128 queued.
  REQUIRE(batches == 4);
  REQUIRE(q.len() == (3 * kCap) - 4 * (kCap / 2 + 1));
  std::uint32_t last = 0;
  bool first = true;
  while (Item* it = q.pop()) {
    REQUIRE((first || it->id > last));
    first = false;
    last = it->id;
    ++seen[it->id];
  }
  for (std::size_t i = 0; i < seen.size(); ++i) REQUIRE(seen[i] == 1);
}

TEST_CASE("run queue: a single queued item is stolen only by a steal rounding up", "[run_queue]") {
  Queue src;
  Queue dst;
  auto items = make_items(1);
  REQUIRE(src.steal_into(dst) == nullptr);  // empty
  REQUIRE(src.steal_into(dst, true) == nullptr);
  src.push_back(&items[0], no_overflow());
  REQUIRE(src.steal_into(dst) == nullptr);
  REQUIRE(src.len() == 1);
  REQUIRE(dst.empty());
  REQUIRE(src.steal_into(dst, true) == &items[0]);
  REQUIRE(src.empty());
  REQUIRE(dst.empty());
  REQUIRE(src.pop() == nullptr);
}

TEST_CASE("run queue: a steal moves half, rounded down or up, and returns the newest stolen",
          "[run_queue]") {
  const std::uint32_t n = GENERATE(2u, 3u, 4u, 5u, 10u, 129u, 255u, 256u);
  const bool round_up = GENERATE(false, true);
  CAPTURE(n, round_up);
  Queue src;
  Queue dst;
  auto items = make_items(n);
  for (auto& it : items) src.push_back(&it, no_overflow());

  const std::uint32_t k = round_up ? (n + 1) / 2 : n / 2;
  Item* got = src.steal_into(dst, round_up);
  REQUIRE(got == &items[k - 1]);
  REQUIRE(src.len() == n - k);
  REQUIRE(dst.len() == k - 1);
  for (std::uint32_t i = 0; i + 1 < k; ++i) REQUIRE(dst.pop() == &items[i]);
  REQUIRE(dst.pop() == nullptr);
  for (std::uint32_t i = k; i < n; ++i) REQUIRE(src.pop() == &items[i]);
  REQUIRE(src.pop() == nullptr);
}

TEST_CASE("run queue: steals chain from queue to queue and across ring laps", "[run_queue]") {
  Queue a;
  Queue b;
  auto items = make_items(2000);
  std::vector<int> seen(items.size(), 0);
  std::size_t next = 0;
  auto note = [&](Item* it) { ++seen[it->id]; };
  while (next < items.size()) {
    for (int i = 0; i < 37 && next < items.size(); ++i) a.push_back(&items[next++], no_overflow());
    if (Item* it = a.steal_into(b)) note(it);
    // b must be drained before it may steal again (at most half full).
    if (Item* it = b.steal_into(a)) note(it);
    while (Item* it = b.pop()) note(it);
    while (a.len() > 50) note(a.pop());
  }
  while (Item* it = a.pop()) note(it);
  for (std::size_t i = 0; i < seen.size(); ++i) REQUIRE(seen[i] == 1);
}

#if defined(SPINDLE_TSAN)
constexpr std::uint32_t kConcurrentItems = 100'000;
#else
constexpr std::uint32_t kConcurrentItems = 1'000'000;
#endif

TEST_CASE("run queue: concurrent owner and thieves consume every item exactly once",
          "[run_queue]") {
  constexpr int kThieves = 3;
  auto items = make_items(kConcurrentItems);
  auto seen = std::make_unique<std::atomic<std::uint32_t>[]>(kConcurrentItems);
  std::atomic<std::uint64_t> consumed{0};
  std::atomic<bool> owner_done{false};
  Queue owner_queue;
  std::vector<std::unique_ptr<Queue>> thief_queues;
  for (int i = 0; i < kThieves; ++i) thief_queues.push_back(std::make_unique<Queue>());

  auto consume = [&](Item* it) {
    // relaxed: the counts are read after join(), which synchronizes.
    seen[it->id].fetch_add(1, std::memory_order_relaxed);
    consumed.fetch_add(1, std::memory_order_relaxed);
  };

  std::uint64_t full_batches = 0;
  std::uint64_t single_batches = 0;
  std::uint64_t bad_batches = 0;
  std::thread owner([&] {
    // The overflow sink stands in for the global queue: it consumes at once.
    auto sink = [&](Item** batch, std::size_t n) {
      if (n == kCap / 2 + 1) {
        ++full_batches;
      } else if (n == 1) {
        ++single_batches;
      } else {
        ++bad_batches;
      }
      for (std::size_t i = 0; i < n; ++i) consume(batch[i]);
    };
    std::uint32_t rng = 0x9e3779b9u;
    auto next_rand = [&rng] {
      rng ^= rng << 13;
      rng ^= rng >> 17;
      rng ^= rng << 5;
      return rng;
    };
    std::uint32_t next = 0;
    while (next < kConcurrentItems) {
      // Bursts longer than the pops on average, so the queue fills and overflows.
      const std::uint32_t burst = next_rand() % 300 + 1;
      for (std::uint32_t i = 0; i < burst && next < kConcurrentItems; ++i) {
        owner_queue.push_back(&items[next++], sink);
      }
      const std::uint32_t pops = next_rand() % 200;
      for (std::uint32_t i = 0; i < pops; ++i) {
        Item* it = owner_queue.pop();
        if (it == nullptr) break;
        consume(it);
      }
    }
    while (Item* it = owner_queue.pop()) consume(it);
    // release; pairs with the acquire load in the thieves' loop.
    owner_done.store(true, std::memory_order_release);
  });

  std::vector<std::thread> thieves;
  for (int t = 0; t < kThieves; ++t) {
    thieves.emplace_back([&, t] {
      Queue& mine = *thief_queues[static_cast<std::size_t>(t)];
      for (;;) {
        // Read the flag before the steal attempt: once the owner is done, one
        // more failed attempt proves nothing is left for this thief.
        // acquire; pairs with the release store by the owner.
        const bool done = owner_done.load(std::memory_order_acquire);
        // Odd thieves round up, so they race the owner for its last item too.
        if (Item* it = owner_queue.steal_into(mine, t % 2 == 1)) {
          consume(it);
          while (Item* rest = mine.pop()) consume(rest);
        } else if (done) {
          break;
        } else {
          std::this_thread::yield();
        }
      }
    });
  }

  owner.join();
  for (auto& th : thieves) th.join();

  REQUIRE(bad_batches == 0);
  REQUIRE(consumed.load() == kConcurrentItems);
  std::uint32_t wrong = 0;
  for (std::uint32_t i = 0; i < kConcurrentItems; ++i) {
    if (seen[i].load(std::memory_order_relaxed) != 1) ++wrong;
  }
  REQUIRE(wrong == 0);
  REQUIRE(owner_queue.empty());
  for (auto& q : thief_queues) REQUIRE(q->empty());
  // Overflow counts depend on timing; they are reported, not asserted.
  INFO("overflow batches: " << full_batches << " full, " << single_batches << " single");
  SUCCEED();
}

}  // namespace
}  // namespace spindle::detail

TEST_CASE("run queue: a steal into a queue without room for half a queue takes nothing",
          "[run_queue]") {
  // Regression: this used to abort. An owner can find its queue empty while a
  // paused thief of it still holds more than half of the slots; here the room
  // is simply taken by queued items.
  spindle::detail::RunQueue<int> src, dst;
  std::vector<int> items(300);
  auto no_overflow = [](int**, std::size_t) { FAIL("unexpected overflow"); };
  for (int i = 0; i < 10; ++i) src.push_back(&items[static_cast<std::size_t>(i)], no_overflow);
  for (int i = 0; i < 200; ++i)
    dst.push_back(&items[static_cast<std::size_t>(100 + i)], no_overflow);
  CHECK(src.steal_into(dst) == nullptr);
  CHECK(src.len() == 10);
  CHECK(dst.len() == 200);
}
