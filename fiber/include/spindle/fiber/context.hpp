// The context switch: the one place that changes stacks. Built on Boost.Context's
// fcontext (jump_fcontext/make_fcontext) with the ASan and TSan fiber hooks.
// This is the mechanism under spindle's parking, not a parking call: it knows
// nothing of workers, and never blocks a thread (a switch is a few register
// moves). The scheduler decides which context runs where.
#pragma once

#include <cstddef>

#include "spindle/fiber/stack.hpp"

namespace spindle::fiber {

class Context;

// Suspends the running context `from` and resumes `to`, handing it `data`.
// Returns in `from` when another context switches back to it, with that
// switcher's `data`. `to` must be suspended; the caller must be running `from`.
void* switch_context(Context& from, Context& to, void* data) noexcept;

// Like switch_context, but `from` has finished and is never resumed; once `to`
// runs, `from`'s stack may be reused. Does not return.
[[noreturn]] void exit_to(Context& from, Context& to, void* data) noexcept;

// Writes up to `max` return addresses of suspended context `ctx` to `frames`,
// innermost first, and returns how many. It runs the unwinder briefly on top
// of `ctx`'s stack on the calling thread, so no other thread may resume `ctx`
// during the call. Returns 0 where that is not supported (sanitizer builds,
// architectures other than x86-64).
std::size_t backtrace_of(Context& ctx, void** frames, std::size_t max) noexcept;

// Saved execution state of a fiber or of a thread's own stack.
// Not thread-safe: at most one thread runs or resumes a given context at a time.
// A context that is running has no saved state; it is "suspended" between a
// switch away from it and the next switch to it.
class Context {
 public:
  using Entry = void (*)(void* arg);

  // The calling thread's own stack. It starts out running; it gets saved state
  // the first time the thread switches away from it.
  Context() noexcept;

  // A new fiber on `stack`, suspended before its first instruction. The first
  // switch to it calls entry(arg) on that stack (that switch's data is not
  // delivered; the fiber gets `arg` instead). `entry` must never return: a
  // fiber ends with exit_to(). The start of the stack is offset by a few cache
  // lines, varying per context, so stacks do not alias in the L1 cache.
  Context(const Stack& stack, Entry entry, void* arg) noexcept;

  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // How far above a suspended context's saved stack pointer prefetch()
  // reaches: its saved registers and the innermost frames a resume returns
  // through (a parked I/O call's chain is about this deep).
  static constexpr std::size_t kPrefetchBytes = 1024;

  // Asks the CPU to fetch the top kPrefetchBytes of this suspended context's
  // stack, so that a switch to it soon after finds them cached. Only a hint:
  // it changes no state and never faults, whatever the context's state.
  void prefetch() const noexcept {
    const char* top = static_cast<const char*>(fctx_);
    for (std::size_t i = 0; i < kPrefetchBytes; i += 64) __builtin_prefetch(top + i);
  }

 private:
  friend void* switch_context(Context& from, Context& to, void* data) noexcept;
  friend void exit_to(Context& from, Context& to, void* data) noexcept;
  friend std::size_t backtrace_of(Context& ctx, void** frames, std::size_t max) noexcept;
  struct Access;
  friend struct Access;
  struct Capturer;

  void* fctx_ = nullptr;  // saved fcontext while suspended
  Entry entry_ = nullptr;
  // Suspended inside backtrace_of's capture frame (not at its own switch):
  // the next capture re-enters that frame instead of stacking another.
  bool in_capture_ = false;
  void* arg_ = nullptr;
  // Read only by the sanitizer hooks, so unused in other builds.
  [[maybe_unused]] const void* stack_bottom_ = nullptr;  // sanitizer view of the stack
  [[maybe_unused]] std::size_t stack_size_ = 0;
  [[maybe_unused]] void* asan_fake_stack_ = nullptr;
  [[maybe_unused]] void* tsan_fiber_ = nullptr;
  [[maybe_unused]] bool owns_tsan_fiber_ = false;
};

}  // namespace spindle::fiber
