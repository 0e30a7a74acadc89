// StackPool: sizes, reuse, guard pages (both modes) and the mapping budget.

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "child.hpp"
#include "skip.hpp"
#include "spindle/fiber/stack.hpp"

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102
#endif

namespace spindle::fiber {
namespace {

using Catch::Matchers::Contains;
using test::ChildResult;
using test::run_in_child;

constexpr std::size_t kKiB = 1024;
const std::size_t kPage = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));

// Whether madvise(2) takes `advice` on a scratch page.
bool kernel_has_advice(int advice) {
  void* p = ::mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(p != MAP_FAILED);
  const bool ok = ::madvise(p, kPage, advice) == 0;
  ::munmap(p, kPage);
  return ok;
}

// Whether the page at `page` is in memory.
bool resident(void* page) {
  unsigned char vec = 0;
  REQUIRE(::mincore(page, kPage, &vec) == 0);
  return (vec & 1) != 0;
}

// Makes this process's madvise(MADV_GUARD_INSTALL) fail with EINVAL, as on a
// kernel older than 6.13, so the pool takes its mprotect fallback. For a
// fork()ed child only: a seccomp filter cannot be removed.
bool refuse_guard_install() {
#if defined(__x86_64__)
  constexpr std::uint32_t kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
  constexpr std::uint32_t kArch = AUDIT_ARCH_AARCH64;
#else
  return false;
#endif
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_madvise, 0, 3),
      // Low half of the advice argument (little-endian).
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, args) + 2 * sizeof(std::uint64_t)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, MADV_GUARD_INSTALL, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EINVAL & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog = {static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

// Commits the top page of a stack. Not sanitizer-instrumented: the point is
// the page fault, not a shadow-memory write per stack.
__attribute__((no_sanitize("address", "thread"))) void commit_top_page(const Stack& s) {
  static_cast<volatile char*>(s.base)[-1] = 1;
}

void touch(const Stack& s) {
  static_cast<volatile char*>(s.limit)[0] = 1;
  static_cast<volatile char*>(s.base)[-1] = 1;
}

TEST_CASE("fiber: StackPool rounds stack_size up to the page size") {
  StackPool pool(16 * kKiB + 1);
  CHECK(pool.stack_size() == 16 * kKiB + kPage);
  const Stack s = pool.allocate();
  CHECK(s.size() == pool.stack_size());
  CHECK(reinterpret_cast<std::uintptr_t>(s.limit) % kPage == 0);
  CHECK(reinterpret_cast<std::uintptr_t>(s.base) % kPage == 0);
  pool.deallocate(s);

  StackPool exact(64 * kKiB);
  CHECK(exact.stack_size() == 64 * kKiB);
}

TEST_CASE("fiber: StackPool rejects stack sizes outside 16 KiB to 1 GiB") {
  for (const std::size_t bad : {std::size_t{0}, 16 * kKiB - 1, (std::size_t{1} << 30) + 1}) {
    INFO("stack_size " << bad);
    CHECK_THROWS_AS(StackPool(bad), std::invalid_argument);
    CHECK_THROWS_WITH(StackPool(bad), Contains("stack_size"));
  }

  // Both bounds are allowed; a 1 GiB stack fills a slab of its own.
  StackPool smallest(16 * kKiB);
  CHECK(smallest.stack_size() == 16 * kKiB);
  StackPool largest(std::size_t{1} << 30);
  const Stack a = largest.allocate();
  const Stack b = largest.allocate();
  CHECK(a.size() == std::size_t{1} << 30);
  touch(a);
  touch(b);
  largest.deallocate(a);
  largest.deallocate(b);
}

TEST_CASE("fiber: StackPool reuses freed stacks last-in first-out") {
  StackPool pool(64 * kKiB);
  CHECK(pool.in_use() == 0);
  const Stack a = pool.allocate();
  const Stack b = pool.allocate();
  const Stack c = pool.allocate();
  CHECK(pool.in_use() == 3);
  CHECK(a.base != b.base);
  CHECK(b.base != c.base);

  pool.deallocate(b);
  pool.deallocate(c);
  CHECK(pool.in_use() == 1);
  const Stack c2 = pool.allocate();
  const Stack b2 = pool.allocate();
  CHECK(c2.base == c.base);
  CHECK(b2.base == b.base);
  CHECK(pool.in_use() == 3);

  const Stack d = pool.allocate();  // free list empty again: a fresh one
  CHECK(d.base != a.base);
  CHECK(d.base != b.base);
  CHECK(d.base != c.base);
  CHECK(pool.in_use() == 4);

  for (const Stack& s : {a, b2, c2, d}) pool.deallocate(s);
  CHECK(pool.in_use() == 0);
  pool.deallocate(Stack{});  // an empty Stack is ignored
  CHECK(pool.in_use() == 0);
}

TEST_CASE("fiber: StackPool stacks are disjoint with a guard gap between them") {
  StackPool pool(16 * kKiB);
  // More than one slab's worth (64 MiB / 20 KiB is about 3276 stacks).
  std::vector<Stack> stacks(5000);
  for (Stack& s : stacks) s = pool.allocate();
  CHECK(pool.in_use() == stacks.size());
  std::vector<Stack> sorted = stacks;
  std::sort(sorted.begin(), sorted.end(),
            [](const Stack& x, const Stack& y) { return x.limit < y.limit; });
  for (std::size_t i = 1; i < sorted.size(); ++i) {
    const auto gap = static_cast<char*>(sorted[i].limit) - static_cast<char*>(sorted[i - 1].base);
    REQUIRE(gap >= static_cast<std::ptrdiff_t>(kPage));
  }
  for (const Stack& s : stacks) pool.deallocate(s);
  CHECK(pool.in_use() == 0);
}

TEST_CASE("fiber: StackPool stacks are writable across the whole usable range") {
  StackPool pool(64 * kKiB);
  const Stack a = pool.allocate();
  const Stack b = pool.allocate();
  std::memset(a.limit, 0xa5, a.size());
  std::memset(b.limit, 0x5a, b.size());
  const auto* pa = static_cast<const unsigned char*>(a.limit);
  const auto* pb = static_cast<const unsigned char*>(b.limit);
  CHECK(std::all_of(pa, pa + a.size(), [](unsigned char v) { return v == 0xa5; }));
  CHECK(std::all_of(pb, pb + b.size(), [](unsigned char v) { return v == 0x5a; }));
  pool.deallocate(a);
  pool.deallocate(b);
}

TEST_CASE("fiber: StackPool uses MADV_GUARD_INSTALL when the kernel has it") {
  if (!kernel_has_advice(MADV_GUARD_INSTALL)) {
    SPINDLE_SKIP("kernel lacks madvise(MADV_GUARD_INSTALL) (Linux 6.13+)");
  }
  StackPool pool(64 * kKiB);
  CHECK(pool.guard_mode() == GuardMode::kMadvise);
}

TEST_CASE("fiber: StackPool guard page below a stack faults") {
  const ChildResult r = run_in_child([] {
    StackPool pool(64 * kKiB);
    const Stack first = pool.allocate();
    const Stack middle = pool.allocate();
    const Stack last = pool.allocate();
    for (const Stack& s : {first, middle, last}) touch(s);
    std::fprintf(stderr, "usable range ok\n");
    static_cast<volatile char*>(middle.limit)[-1] = 1;
    return 3;  // survived the guard page
  });
  INFO(r.describe());
  CHECK(r.killed_by(SIGSEGV));
  CHECK_THAT(r.err, Contains("usable range ok"));
}

TEST_CASE("fiber: StackPool guards every stack of every carved batch") {
  const ChildResult r = run_in_child([] {
    StackPool pool(64 * kKiB);
    // Several batches' worth, the last one partly handed out.
    std::vector<Stack> stacks(41);
    for (Stack& s : stacks) {
      s = pool.allocate();
      touch(s);
    }
    std::fprintf(stderr, "usable ranges ok\n");
    static_cast<volatile char*>(stacks[37].limit)[-1] = 1;
    return 3;  // survived the guard page
  });
  INFO(r.describe());
  CHECK(r.killed_by(SIGSEGV));
  CHECK_THAT(r.err, Contains("usable ranges ok"));
}

TEST_CASE("fiber: StackPool hands out stacks with their top page committed") {
  if (!kernel_has_advice(MADV_POPULATE_WRITE)) {
    SPINDLE_SKIP("kernel lacks madvise(MADV_POPULATE_WRITE) (Linux 5.14+)");
  }
  StackPool pool(64 * kKiB);
  std::vector<Stack> stacks(41);
  for (Stack& s : stacks) s = pool.allocate();
  for (std::size_t i = 0; i < stacks.size(); ++i) {
    INFO("stack " << i);
    CHECK(resident(static_cast<char*>(stacks[i].base) - kPage));
    // Only the top page: the rest stays uncommitted until a fiber grows into it.
    CHECK_FALSE(resident(stacks[i].limit));
  }
  for (const Stack& s : stacks) pool.deallocate(s);
}

TEST_CASE("fiber: StackPool falls back to mprotect guards without MADV_GUARD_INSTALL") {
  const ChildResult r = run_in_child([] {
    if (!refuse_guard_install()) return 77;
    StackPool pool(64 * kKiB);
    if (pool.guard_mode() != GuardMode::kMprotect) {
      std::fprintf(stderr, "guard mode is not kMprotect\n");
      return 1;
    }
    const std::size_t before = test::count_mappings();
    std::vector<Stack> stacks(8);
    for (Stack& s : stacks) {
      s = pool.allocate();
      touch(s);
    }
    const std::size_t after = test::count_mappings();
    // Each carved stack splits the slab twice: [guard][stack].
    if (after < before + 2 * stacks.size() - 1) {
      std::fprintf(stderr, "mappings %zu -> %zu for %zu stacks\n", before, after, stacks.size());
      return 2;
    }
    std::fprintf(stderr, "mprotect mode ok\n");
    static_cast<volatile char*>(stacks[3].limit)[-1] = 1;
    return 3;  // survived the guard page
  });
  if (r.exited_with(77)) {
    SPINDLE_SKIP("cannot install a seccomp filter to refuse MADV_GUARD_INSTALL");
  }
  INFO(r.describe());
  CHECK(r.killed_by(SIGSEGV));
  CHECK_THAT(r.err, Contains("mprotect mode ok"));
}

TEST_CASE("fiber: StackPool names vm.max_map_count when mprotect guards run out") {
#if defined(SPINDLE_ASAN) || defined(SPINDLE_TSAN)
  SPINDLE_SKIP("exhausting vm.max_map_count also starves the sanitizer runtime's own mmaps");
#endif
  const long limit = test::max_map_count();
  if (limit <= 0 || limit > 262144) {
    SPINDLE_SKIP("vm.max_map_count is %ld: too high to exhaust quickly", limit);
  }
  const ChildResult r = run_in_child([limit] {
    if (!refuse_guard_install()) return 77;
    StackPool pool(16 * kKiB);
    std::size_t allocated = 0;
    try {
      for (; allocated < 4 * static_cast<std::size_t>(limit); ++allocated) (void)pool.allocate();
    } catch (const std::system_error& e) {
      std::fprintf(stderr, "after %zu stacks: %s\n", allocated, e.what());
      const std::string what = e.what();
      const bool ok =
          e.code().value() == ENOMEM && what.find("vm.max_map_count") != std::string::npos &&
          what.find(std::to_string(limit)) != std::string::npos &&
          what.find(std::to_string(allocated) + " stacks in use") != std::string::npos &&
          what.find("mprotect") != std::string::npos;
      return ok ? 0 : 1;
    } catch (const std::bad_alloc&) {
      std::fprintf(stderr, "bad_alloc after %zu stacks\n", allocated);
      return 2;
    }
    std::fprintf(stderr, "no failure after %zu stacks\n", allocated);
    return 3;
  });
  if (r.exited_with(77)) {
    SPINDLE_SKIP("cannot install a seccomp filter to refuse MADV_GUARD_INSTALL");
  }
  INFO(r.describe());
  CHECK(r.exited_with(0));
}

TEST_CASE("fiber: StackPool holds 100000 touched stacks in a few mappings") {
  StackPool pool(64 * kKiB);
  if (pool.guard_mode() != GuardMode::kMadvise) {
    SPINDLE_SKIP("pool uses mprotect guards (no MADV_GUARD_INSTALL): 2 mappings per stack");
  }
  constexpr std::size_t kStacks = 100000;
  const std::size_t before = test::count_mappings();
  std::vector<Stack> stacks(kStacks);
  for (Stack& s : stacks) {
    s = pool.allocate();
    commit_top_page(s);
  }
  const std::size_t after = test::count_mappings();
  INFO("mappings before " << before << ", after " << after << ", max_map_count "
                          << test::max_map_count());
  CHECK(pool.in_use() == kStacks);
  // About 6.5 GiB of address space in 64 MiB slabs: ~100 slabs. (TSan adds a
  // few mappings of its own per slab.)
  CHECK(after < before + kStacks / 100);
  for (const Stack& s : stacks) pool.deallocate(s);
  CHECK(pool.in_use() == 0);
}

}  // namespace
}  // namespace spindle::fiber
