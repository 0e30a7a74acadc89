// full_fence(): the seq_cst fence of the Dekker handshakes (IdleSet, Parker).
#pragma once

#include <atomic>

namespace spindle::detail {

#if defined(__SANITIZE_THREAD__) || defined(SPINDLE_TSAN)
// TSan does not model standalone fences. A seq_cst read-modify-write of one
// shared word on both sides of a handshake orders them the same way and is
// something TSan understands.
inline std::atomic<unsigned> tsan_fence_word{0};
inline void full_fence() noexcept { tsan_fence_word.fetch_add(0, std::memory_order_seq_cst); }
#else
inline void full_fence() noexcept { std::atomic_thread_fence(std::memory_order_seq_cst); }
#endif

}  // namespace spindle::detail
