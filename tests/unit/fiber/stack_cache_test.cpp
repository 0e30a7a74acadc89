// StackCache: bounded LIFO in front of the pool.

#include <catch2/catch.hpp>

#include "spindle/fiber/stack.hpp"

namespace spindle::fiber {
namespace {

constexpr std::size_t kStackSize = 64 * 1024;

TEST_CASE("fiber: StackCache keeps at most its capacity and reuses LIFO") {
  StackPool pool(kStackSize);
  StackCache cache(pool, 2);
  const Stack a = cache.allocate();
  const Stack b = cache.allocate();
  const Stack c = cache.allocate();
  CHECK(cache.cached() == 0);
  CHECK(pool.in_use() == 3);

  cache.deallocate(a);
  cache.deallocate(b);
  CHECK(cache.cached() == 2);
  CHECK(pool.in_use() == 3);  // cached stacks stay checked out of the pool

  cache.deallocate(c);  // full: goes back to the pool
  CHECK(cache.cached() == 2);
  CHECK(pool.in_use() == 2);

  CHECK(cache.allocate().base == b.base);  // last in, first out
  CHECK(cache.cached() == 1);
  CHECK(pool.allocate().base == c.base);  // the overflow went to the pool's free list
  CHECK(pool.in_use() == 3);

  pool.deallocate(c);
  cache.deallocate(b);
  CHECK(cache.cached() == 2);
}

TEST_CASE("fiber: StackCache takes from the pool when empty and returns all on destruction") {
  StackPool pool(kStackSize);
  Stack first;
  Stack more[5];
  {
    StackCache cache(pool, 8);
    first = cache.allocate();
    CHECK(pool.in_use() == 1);
    for (Stack& s : more) s = cache.allocate();
    CHECK(pool.in_use() == 6);
    for (const Stack& s : more) cache.deallocate(s);
    cache.deallocate(first);
    CHECK(cache.cached() == 6);
    CHECK(pool.in_use() == 6);
  }
  CHECK(pool.in_use() == 0);
  const Stack again = pool.allocate();  // returned stacks are reused
  bool reused = again.base == first.base;
  for (const Stack& s : more) reused = reused || again.base == s.base;
  CHECK(reused);
  pool.deallocate(again);
}

TEST_CASE("fiber: StackCache with capacity zero passes everything through") {
  StackPool pool(kStackSize);
  StackCache cache(pool, 0);
  const Stack s = cache.allocate();
  CHECK(pool.in_use() == 1);
  cache.deallocate(s);
  CHECK(cache.cached() == 0);
  CHECK(pool.in_use() == 0);
  cache.deallocate(Stack{});
  CHECK(pool.in_use() == 0);
}

}  // namespace
}  // namespace spindle::fiber
