// RunQueue: a worker's bounded local run queue, lock-free for one owner and
// any number of thieves (the Go/tokio design; see tokio's
// runtime/scheduler/multi_thread/queue.rs).
//
// The protocol in one paragraph. The queue is a ring of kCapacity slots
// indexed by free-running u32 positions. `tail_` is the next position the
// owner writes; only the owner stores it. `head_` packs two u32 positions into
// one atomic u64: `real`, the next position to take, and `steal`, the first
// position a thief is still copying out. When no steal is in progress they are
// equal. Every take (owner pop, owner overflow, thief claim) is a CAS on
// `head_`, so takers never hand out a slot twice. A thief claims a batch by
// advancing `real` only, copies the batch out, then publishes `steal = real`;
// while `steal != real` no other thief may steal and the owner may not reuse
// the claimed slots (it counts free space from `steal`, not `real`).
//
// Rejected: a mutex per queue (the owner's push and pop are the hot path of
// every spawn and wake); an unbounded queue (the global queue absorbs
// overflow, and a bound keeps stealing O(capacity/2)); stealing ceil(n/2)
// always, like tokio (each lone push would wake a thief to migrate a fiber its
// worker is about to run). A thief takes half rounded down, as the reference
// does, unless it has seen the owner stay in one fiber's turn: then half
// rounded up, so a fiber queued alone behind that turn moves.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>

#include "spindle/base/assert.hpp"

namespace spindle::detail {

// Thread-safety: push_back() and pop() are owner-only (one thread at a time,
// the worker that owns the queue). steal_into() may be called by any other
// thread concurrently with the owner and with other thieves; the caller must
// own `dst`. len(), empty() and is_stealable() may be called from any thread
// and return a snapshot that may be stale by the time it is used.
//
// Items are not owned: the queue stores raw pointers and never dereferences
// them. A pointer handed to push_back() comes back exactly once, from pop(),
// steal_into() (on this queue or, after a steal, on the thief's), or an
// overflow callback.
template <class T>
class RunQueue {
 public:
  static constexpr std::uint32_t kCapacity = 256;

  RunQueue() = default;
  RunQueue(const RunQueue&) = delete;
  RunQueue& operator=(const RunQueue&) = delete;

  // Owner only. Appends `item` at the tail. When the queue is full and no
  // steal is in progress, moves the oldest kCapacity/2 items plus `item` out in
  // one call `overflow(T** items, std::size_t n)` (n = kCapacity/2 + 1, oldest
  // first, `item` last; the array lives only for the call). When the queue is
  // full because a thief is mid-steal, the thief is about to free space, so only
  // `item` goes to `overflow` (n = 1).
  template <class Overflow>
  void push_back(T* item, Overflow&& overflow) {
    // relaxed: only this thread stores tail_.
    const std::uint32_t tail = tail_.load(std::memory_order_relaxed);
    for (;;) {
      // acquire; pairs with the release of the publishing CAS in steal_into(), so
      // slots a thief has finished copying out are free to overwrite.
      const std::uint64_t head = head_.load(std::memory_order_acquire);
      const auto [steal, real] = unpack(head);
      if (tail - steal < kCapacity) break;
      if (steal != real) {
        T* single[1] = {item};
        overflow(single, std::size_t{1});
        return;
      }
      if (push_overflow(item, real, tail, overflow)) return;
      // A thief claimed items between our load and our CAS: there may be room now.
    }
    buffer_[tail & kMask] = item;
    // release; pairs with the acquire loads of tail_ in steal_into() and len(),
    // which makes the slot write above visible before the slot is claimable.
    tail_.store(tail + 1, std::memory_order_release);
  }

  // Owner only. Takes the oldest item, or nullptr if there is none left for the
  // owner (items claimed by an in-progress steal no longer count).
  T* pop() {
    T* item = nullptr;
    return pop_batch(&item, 1) == 1 ? item : nullptr;
  }

  // Owner only. Takes the oldest items with one CAS, at most `max` and at most
  // half of those the owner could pop, rounded up (so a thief still finds the
  // other half), into out[0..n), oldest first. Returns n; 0 if the queue is
  // empty for the owner.
  std::uint32_t pop_batch(T** out, std::uint32_t max) {
    // acquire; pairs with the release of the CASes on head_ in steal_into().
    std::uint64_t head = head_.load(std::memory_order_acquire);
    for (;;) {
      const auto [steal, real] = unpack(head);
      // relaxed: only this thread stores tail_.
      const std::uint32_t avail = tail_.load(std::memory_order_relaxed) - real;
      if (avail == 0) return 0;
      const std::uint32_t n = std::min(max, (avail + 1) / 2);
      const std::uint32_t next_real = real + n;
      // With no steal in progress both halves move; otherwise the thief owns
      // [steal, real) and will publish steal = real itself.
      const std::uint64_t next =
          steal == real ? pack(next_real, next_real) : pack(steal, next_real);
      // acq_rel: the release pairs with the acquire loads of head_ in
      // steal_into() and len() (a thread that sees the new head then reads a
      // tail_ at least as new, so tail - real never underflows); the acquire
      // pairs with the thieves' release CASes. The failure load is acquire for
      // the same reason as the initial load.
      if (head_.compare_exchange_weak(head, next, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
        // The claimed slots are refilled only by this thread, after this.
        for (std::uint32_t i = 0; i < n; ++i) out[i] = buffer_[(real + i) & kMask];
        return n;
      }
    }
  }

  // Called by a thief that owns `dst` (dst != this). Moves half of this
  // queue's items, rounded up if `round_up` and down otherwise, to dst's tail
  // and returns the newest of them for the thief to run now (it is not left in
  // dst). Returns nullptr if nothing was stolen: too few items, or another
  // thief is mid-steal.
  //
  // dst needs room for half a full queue. An empty dst can still lack it: a
  // thief of dst paused mid-copy keeps dst's steal position behind while dst's
  // owner goes on pushing and popping. Then nothing is stolen (as in tokio).
  T* steal_into(RunQueue& dst, bool round_up = false) {
    SPINDLE_ASSERT(&dst != this, "steal_into: a queue cannot steal from itself");
    // relaxed: the caller owns dst, so it is the only thread that stores dst.tail_.
    const std::uint32_t dst_tail = dst.tail_.load(std::memory_order_relaxed);
    // acquire; pairs with the release CAS by which a thief of dst published its
    // steal, so the slots counted as free below are really done with.
    const std::uint32_t dst_steal = unpack(dst.head_.load(std::memory_order_acquire)).steal;
    if (dst_tail - dst_steal > kCapacity / 2) return nullptr;

    const std::uint32_t n = claim_and_copy(dst, dst_tail, round_up);
    if (n == 0) return nullptr;
    // The newest stolen item is returned, not exposed in dst.
    T* const ret = dst.buffer_[(dst_tail + n - 1) & kMask];
    if (n > 1) {
      // release; pairs with the acquire loads of dst.tail_ in steal_into() and
      // len() by other threads: the copied slots are visible before they count.
      dst.tail_.store(dst_tail + n - 1, std::memory_order_release);
    }
    return ret;
  }

  // Any thread. A snapshot of the number of items the owner could still pop;
  // exact when called by the owner with no thief running.
  std::uint32_t len() const {
    // acquire; pairs with the release CASes on head_ (pop, overflow, steal): a
    // new head is seen only with a tail at least as new.
    const std::uint32_t real = unpack(head_.load(std::memory_order_acquire)).real;
    // acquire; pairs with the release stores of tail_ in push_back() and
    // steal_into().
    const std::uint32_t tail = tail_.load(std::memory_order_acquire);
    const std::uint32_t n = tail - real;
    // The two loads are not one snapshot: the owner may have popped and pushed
    // in between, so clamp to what the ring can hold.
    return n < kCapacity ? n : kCapacity;
  }
  bool empty() const { return len() == 0; }
  // Whether a steal_into() rounding down could take anything.
  bool is_stealable() const { return len() >= 2; }

 private:
  static constexpr std::uint32_t kMask = kCapacity - 1;
  static constexpr std::uint32_t kOverflowBatch = kCapacity / 2;
  static_assert((kCapacity & kMask) == 0, "kCapacity must be a power of two");

  struct Positions {
    std::uint32_t steal;
    std::uint32_t real;
  };
  static constexpr Positions unpack(std::uint64_t head) {
    return {static_cast<std::uint32_t>(head >> 32), static_cast<std::uint32_t>(head)};
  }
  static constexpr std::uint64_t pack(std::uint32_t steal, std::uint32_t real) {
    return (std::uint64_t{steal} << 32) | real;
  }

  // Owner only, with the queue full and no steal in progress (steal == real ==
  // `real`). Claims the oldest half with one CAS and hands it plus `item` to
  // `overflow`. Returns false, having done nothing, if a thief moved head_ first.
  template <class Overflow>
  bool push_overflow(T* item, std::uint32_t real, std::uint32_t tail, Overflow& overflow) {
    SPINDLE_ASSERT(tail - real == kCapacity, "push_overflow: the queue is not full");
    std::uint64_t expected = pack(real, real);
    const std::uint32_t next = real + kOverflowBatch;
    // release; pairs with the acquire loads of head_ in steal_into() and len()
    // (a thread that sees the new head reads a tail_ at least as new). No
    // acquire is needed: the claimed slots were written by this thread. Claiming
    // before reading the slots is safe because only this thread refills them.
    if (!head_.compare_exchange_strong(expected, pack(next, next), std::memory_order_release,
                                       std::memory_order_relaxed)) {
      return false;
    }
    std::array<T*, kOverflowBatch + 1> batch;
    for (std::uint32_t i = 0; i < kOverflowBatch; ++i) batch[i] = buffer_[(real + i) & kMask];
    batch[kOverflowBatch] = item;
    overflow(batch.data(), batch.size());
    return true;
  }

  // Thief side: claims half of this queue (rounded as steal_into() says) by
  // advancing `real`, copies the batch to dst's slots starting at dst_tail (not
  // yet exposed in dst), then publishes steal = real. Returns the number of
  // items copied.
  std::uint32_t claim_and_copy(RunQueue& dst, std::uint32_t dst_tail, bool round_up) {
    // acquire; pairs with the release CASes on head_ by the owner and by other
    // thieves, so the tail_ read below is at least as new as the head.
    std::uint64_t prev = head_.load(std::memory_order_acquire);
    std::uint64_t next = 0;
    std::uint32_t n = 0;
    for (;;) {
      const auto [steal, real] = unpack(prev);
      // Another thief is mid-steal: leave the queue to it.
      if (steal != real) return 0;
      // acquire; pairs with the release store of tail_ in push_back(): the slots
      // below tail are written before we copy them.
      const std::uint32_t tail = tail_.load(std::memory_order_acquire);
      n = (tail - real + (round_up ? 1 : 0)) / 2;
      if (n == 0) return 0;
      next = pack(steal, real + n);
      // acq_rel: the acquire pairs with the release CASes and stores of the owner
      // and other thieves; the release pairs with the acquire loads of head_ by
      // other threads (the new real is seen only with a tail_ at least this new).
      if (head_.compare_exchange_weak(prev, next, std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
        break;
      }
    }
    // A successful CAS saw steal == real, and tail - steal <= kCapacity then.
    SPINDLE_ASSERT(n <= kCapacity / 2, "steal_into: claimed more than half the ring");

    const std::uint32_t first = unpack(next).steal;
    for (std::uint32_t i = 0; i < n; ++i) {
      dst.buffer_[(dst_tail + i) & kMask] = buffer_[(first + i) & kMask];
    }

    // Publish the end of the steal: steal catches up with real. The owner may
    // have moved real meanwhile (pop), so retry until our CAS lands.
    prev = next;
    for (;;) {
      const std::uint32_t real = unpack(prev).real;
      // acq_rel: the release pairs with the acquire loads of head_ in push_back()
      // (the owner reuses the slots we copied only after seeing this) and in
      // steal_into() by other thieves; the acquire keeps head_ reads ordered
      // after the owner's release CASes.
      if (head_.compare_exchange_weak(prev, pack(real, real), std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
        return n;
      }
      const auto [cur_steal, cur_real] = unpack(prev);
      SPINDLE_ASSERT(cur_steal != cur_real, "steal_into: a steal was published twice");
    }
  }

  // Invariant: tail_ - steal <= kCapacity, and steal <= real <= tail_ (as
  // wrapping u32 distances). Slots [steal, real) belong to the thief in
  // progress, [real, tail_) to the owner's queue, the rest are free.
  // Written by the owner with a single CAS per take; by thieves with a claim CAS
  // and a publish CAS.
  alignas(64) std::atomic<std::uint64_t> head_{0};
  // Invariant: stored only by the owner.
  alignas(64) std::atomic<std::uint32_t> tail_{0};
  // Slot i & kMask is written only by the owner, and only while free; read by
  // whoever claimed it through head_.
  alignas(64) std::array<T*, kCapacity> buffer_{};
};

}  // namespace spindle::detail
