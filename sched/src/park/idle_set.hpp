// IdleSet: which pool workers are parked, how many are searching for work,
// and whether a parked one is watching the others.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace spindle::detail {

// Thread-safe. One 64-bit word, bit i for pool worker i (so at most 64
// workers), plus the count of searching workers.
//
// Park: set the bit, then (after a seq_cst fence) look once more at every
// queue. Push: publish, seq_cst fence, then claim_one() and unpark the worker
// claimed. Each side fences between its store and its load, so at least one
// sees the other: the parker finds the work or the pusher finds the parker.
//
// Watch: a fiber queued alone behind one that keeps its worker busy is not
// worth a wake per push, so one parked worker at most (the watcher) parks
// with a timeout while another is awake, and looks again for queues stuck
// behind a long turn. It claims the watch, then checks that another worker is
// awake; if none is, it gives the watch back and checks once more. A worker
// that queues a fiber alone checks watched() and then idle_mask() (it cleared
// its own idle bit before); all are seq_cst, so either the parker sees it
// awake and watches, or it sees no watcher and an idle worker to wake.
class IdleSet {
 public:
  explicit IdleSet(std::size_t workers) noexcept : workers_(workers) {}

  void set_idle(std::size_t i) noexcept { idle_.fetch_or(bit(i), std::memory_order_seq_cst); }
  // Returns true if the bit was still set (the worker was not claimed).
  bool clear_idle(std::size_t i) noexcept {
    return idle_.fetch_and(~bit(i), std::memory_order_seq_cst) & bit(i);
  }

  // Claims the lowest idle worker (clears its bit) and counts it as a searcher
  // on its behalf. Returns its index, or -1 if none is idle.
  int claim_one() noexcept {
    std::uint64_t cur = idle_.load(std::memory_order_seq_cst);
    while (cur) {
      const int i = std::countr_zero(cur);
      if (idle_.compare_exchange_weak(cur, cur & ~bit(static_cast<std::size_t>(i)),
                                      std::memory_order_seq_cst)) {
        searching_.fetch_add(1, std::memory_order_seq_cst);
        return i;
      }
    }
    return -1;
  }

  std::uint64_t idle_mask() const noexcept { return idle_.load(std::memory_order_seq_cst); }
  // A hint without ordering: may miss a worker that is just parking.
  std::uint64_t idle_mask_relaxed() const noexcept { return idle_.load(std::memory_order_relaxed); }

  // At most half of the workers search at once (2 * searching < workers).
  bool try_begin_search() noexcept {
    std::uint32_t cur = searching_.load(std::memory_order_seq_cst);
    while (2 * static_cast<std::size_t>(cur) < workers_) {
      if (searching_.compare_exchange_weak(cur, cur + 1, std::memory_order_seq_cst)) return true;
    }
    return false;
  }
  // Returns true if the caller was the last searcher.
  bool end_search() noexcept { return searching_.fetch_sub(1, std::memory_order_seq_cst) == 1; }
  std::uint32_t searching() const noexcept { return searching_.load(std::memory_order_seq_cst); }

  // Whether a pool worker other than `self` is not parked (or was claimed to
  // wake). `self` is parked, its bit set.
  bool others_awake(std::size_t self) const noexcept {
    const std::uint64_t all = workers_ == 64 ? ~std::uint64_t{0} : bit(workers_) - 1;
    return (idle_mask() | bit(self)) != all;
  }

  // Claims the watch; false if another worker holds it.
  bool try_watch() noexcept {
    bool expected = false;
    return watching_.compare_exchange_strong(expected, true, std::memory_order_seq_cst);
  }
  // Called only by the holder of the watch.
  void end_watch() noexcept { watching_.store(false, std::memory_order_seq_cst); }
  bool watched() const noexcept { return watching_.load(std::memory_order_seq_cst); }

 private:
  static std::uint64_t bit(std::size_t i) noexcept { return std::uint64_t{1} << i; }

  std::size_t workers_;
  alignas(64) std::atomic<std::uint64_t> idle_{0};
  alignas(64) std::atomic<std::uint32_t> searching_{0};
  // Read on every push of a lone fiber, written only as a watch begins or
  // ends: its own line.
  alignas(64) std::atomic<bool> watching_{false};
};

}  // namespace spindle::detail
