// Fiber control blocks: size classes, reuse within a worker, batches traded
// between workers through the depot, the arena fresh blocks come from, and
// over-aligned closures.
#include "core/block_cache.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include "core/block_arena.hpp"
#include "runtime_harness.hpp"

using spindle::detail::block_class;
using spindle::detail::BlockArena;
using spindle::detail::BlockCache;
using spindle::detail::BlockDepot;
using spindle::detail::class_bytes;
using spindle::detail::kBlockBatch;
using spindle::detail::kMaxBlock;

namespace {

BlockArena& arena() { return spindle::detail::block_arena(); }

// The smallest class the depot takes, and the next ones.
constexpr std::size_t kClass = block_class(spindle::detail::kMinTradedBlock);

}  // namespace

TEST_CASE("block classes round sizes up to 16 bytes", "[blocks]") {
  CHECK(block_class(1) == 0);
  CHECK(block_class(16) == 0);
  CHECK(block_class(17) == 1);
  CHECK(block_class(kMaxBlock) == spindle::detail::kBlockClasses - 1);
  for (std::size_t size = 1; size <= kMaxBlock; ++size) {
    const std::size_t c = block_class(size);
    REQUIRE(class_bytes(c) >= size);
    REQUIRE(class_bytes(c) < size + spindle::detail::kBlockGrain);
  }
}

TEST_CASE("a freed block is the next one its class hands out", "[blocks]") {
  BlockDepot depot;
  BlockCache cache(depot);
  void* a = cache.allocate(kClass);
  void* b = cache.allocate(kClass);
  CHECK(a != b);
  cache.deallocate(kClass, a);
  CHECK(cache.allocate(kClass) == a);
  void* other = cache.allocate(kClass + 1);  // another class does not see kClass's blocks
  cache.deallocate(kClass, b);
  CHECK(other != b);
  cache.deallocate(kClass + 1, other);
  cache.deallocate(kClass, a);
}

TEST_CASE("blocks one cache frees reach another cache through the depot", "[blocks]") {
  BlockDepot depot;
  BlockCache allocating(depot);
  BlockCache freeing(depot);
  constexpr std::size_t kCount = 4 * kBlockBatch;
  std::vector<void*> blocks;
  for (std::size_t i = 0; i < kCount; ++i) blocks.push_back(allocating.allocate(kClass));
  for (void* p : blocks) freeing.deallocate(kClass, p);  // past its bound: batches go to the depot
  const std::set<void*> freed(blocks.begin(), blocks.end());
  std::vector<void*> again;
  for (std::size_t i = 0; i < 2 * kBlockBatch; ++i) again.push_back(allocating.allocate(kClass));
  std::size_t reused = 0;
  for (void* p : again) reused += freed.count(p);
  CHECK(reused == again.size());
  for (void* p : again) allocating.deallocate(kClass, p);
}

TEST_CASE("the depot returns whole batches, and blocks given back singly once a batch is full",
          "[blocks]") {
  BlockDepot depot;
  std::vector<void*> out(kBlockBatch);
  CHECK_FALSE(depot.take(kClass, out.data()));
  CHECK(depot.take_one(kClass) == nullptr);

  std::vector<void*> batch(kBlockBatch);
  for (auto& p : batch) p = arena().carve(class_bytes(kClass));
  depot.put(kClass, batch.data());
  CHECK_FALSE(depot.take(kClass + 1, out.data()));  // another class is still empty
  REQUIRE(depot.take(kClass, out.data()));
  CHECK(std::set<void*>(out.begin(), out.end()) == std::set<void*>(batch.begin(), batch.end()));

  for (std::size_t i = 0; i + 1 < kBlockBatch; ++i) depot.put_one(kClass, out[i]);
  CHECK_FALSE(depot.take(kClass, out.data()));  // one short of a batch
  depot.put_one(kClass, out[kBlockBatch - 1]);
  REQUIRE(depot.take(kClass, out.data()));
  CHECK(std::set<void*>(out.begin(), out.end()) == std::set<void*>(batch.begin(), batch.end()));
}

TEST_CASE("single blocks come from the partial batch first, then split a full one", "[blocks]") {
  BlockDepot depot;
  std::vector<void*> batch(kBlockBatch);
  for (auto& p : batch) p = arena().carve(class_bytes(kClass));
  depot.put(kClass, batch.data());
  void* single = arena().carve(class_bytes(kClass));
  depot.put_one(kClass, single);
  CHECK(depot.take_one(kClass) == single);

  std::set<void*> taken;
  for (std::size_t i = 0; i < kBlockBatch; ++i) {
    void* p = depot.take_one(kClass);
    REQUIRE(p != nullptr);
    taken.insert(p);
  }
  CHECK(taken == std::set<void*>(batch.begin(), batch.end()));
  CHECK(depot.take_one(kClass) == nullptr);
  for (void* p : taken) depot.put_one(kClass, p);
  std::vector<void*> out(kBlockBatch);
  CHECK(depot.take(kClass, out.data()));
}

TEST_CASE("the arena carves disjoint, aligned, zeroed blocks across its chunks", "[blocks]") {
  constexpr std::size_t kBytes = BlockArena::kMaxCarve;
  constexpr std::size_t kCount = 3 * BlockArena::kChunk / kBytes;  // spans several chunks
  BlockArena a;
  std::vector<std::uintptr_t> starts;
  for (std::size_t i = 0; i < kCount; ++i) {
    auto* p = static_cast<char*>(a.carve(kBytes));
    REQUIRE(reinterpret_cast<std::uintptr_t>(p) % 16 == 0);
    REQUIRE(std::all_of(p, p + kBytes, [](char b) { return b == 0; }));
    std::memset(p, static_cast<int>(i % 251) + 1, kBytes);
    starts.push_back(reinterpret_cast<std::uintptr_t>(p));
  }
  std::sort(starts.begin(), starts.end());
  for (std::size_t i = 0; i + 1 < starts.size(); ++i) REQUIRE(starts[i] + kBytes <= starts[i + 1]);
}

TEST_CASE("fibers with over-aligned closures get aligned control blocks", "[blocks]") {
  struct alignas(128) Wide {
    std::uint64_t v[16];
  };
  spindle::test::on_workers([] {
    std::vector<spindle::JoinHandle<std::uintptr_t>> hs;
    for (int i = 0; i < 100; ++i) {
      Wide w{};
      w.v[0] = static_cast<std::uint64_t>(i);
      hs.push_back(spindle::spawn([w] {
        CHECK(w.v[0] < 100);
        return reinterpret_cast<std::uintptr_t>(&w);
      }));
    }
    for (auto& h : hs) CHECK(h.join().value() % alignof(Wide) == 0);
  });
}
