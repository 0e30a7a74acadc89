// Fiber control blocks: size classes, reuse within a worker, batches traded
// between workers through the depot, and over-aligned closures.
#include "block_cache.hpp"

#include <cstdint>
#include <set>
#include <vector>

#include "runtime_harness.hpp"

using spindle::detail::block_class;
using spindle::detail::BlockCache;
using spindle::detail::BlockDepot;
using spindle::detail::class_bytes;
using spindle::detail::kBlockBatch;
using spindle::detail::kMaxBlock;

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
  void* a = cache.allocate(3);
  void* b = cache.allocate(3);
  CHECK(a != b);
  cache.deallocate(3, a);
  CHECK(cache.allocate(3) == a);
  void* other = cache.allocate(4);  // another class does not see class 3's blocks
  cache.deallocate(3, b);
  CHECK(other != b);
  cache.deallocate(4, other);
  cache.deallocate(3, a);
}

TEST_CASE("blocks one cache frees reach another cache through the depot", "[blocks]") {
  BlockDepot depot;
  BlockCache allocating(depot);
  BlockCache freeing(depot);
  constexpr std::size_t kCount = 4 * kBlockBatch;
  std::vector<void*> blocks;
  for (std::size_t i = 0; i < kCount; ++i) blocks.push_back(allocating.allocate(2));
  for (void* p : blocks) freeing.deallocate(2, p);  // past its bound: batches go to the depot
  const std::set<void*> freed(blocks.begin(), blocks.end());
  std::vector<void*> again;
  for (std::size_t i = 0; i < 2 * kBlockBatch; ++i) again.push_back(allocating.allocate(2));
  std::size_t reused = 0;
  for (void* p : again) reused += freed.count(p);
  CHECK(reused == again.size());
  for (void* p : again) allocating.deallocate(2, p);
}

TEST_CASE("the depot holds a bounded number of batches", "[blocks]") {
  BlockDepot depot;
  std::vector<void*> batch(kBlockBatch);
  std::vector<void*> kept;
  std::size_t accepted = 0;
  for (std::size_t i = 0; i < BlockDepot::kMaxBatches + 1; ++i) {
    for (auto& p : batch) p = ::operator new(class_bytes(0));
    if (depot.put(0, batch.data())) {
      ++accepted;
    } else {
      for (void* p : batch) ::operator delete(p);
    }
  }
  CHECK(accepted == BlockDepot::kMaxBatches);
  std::vector<void*> out(kBlockBatch);
  CHECK(depot.take(0, out.data()));
  for (void* p : out) ::operator delete(p);
  CHECK_FALSE(depot.take(1, out.data()));
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
