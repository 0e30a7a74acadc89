// Backtrace of a suspended context.
//
// ontop_fcontext(fctx, data, fn) resumes `fctx` by calling fn on its stack,
// with the context's resume address as fn's return address: to the unwinder,
// fn looks like a function the suspended code called at its suspension point,
// so an ordinary unwind from fn walks the suspended frames. fn then jumps back
// to the caller, which leaves the context suspended inside fn; the caller
// stores that as its new saved state. When a switch_context later resumes it,
// fn returns the resumer's transfer to the original resume point, which
// handles it exactly as if jump_fcontext had returned it.
//
// A context captured twice without running in between is still inside fn:
// the second capture jumps back into that frame (with a tagged Capture
// pointer, where a real resume passes an untagged Hop) rather than stacking
// another fn on top.
//
// Not in sanitizer builds: running on another stack without the sanitizers'
// fiber hooks would corrupt their view of the stacks.

#include <unwind.h>

#include <boost/context/detail/fcontext.hpp>
#include <cstddef>
#include <cstdint>

#include "sanitizers.hpp"
#include "spindle/fiber/context.hpp"

namespace spindle::fiber {
namespace bctx = boost::context::detail;

namespace {

struct Capture {
  Context* ctx;
  void** frames;
  std::size_t max;
  std::size_t count = 0;
  // Capturer::on_top's own frame, and the switch routine the context is
  // suspended in (the caller of switch_context is where user code is).
  std::size_t skip = 2;
};

_Unwind_Reason_Code record_frame(struct _Unwind_Context* uc, void* arg) {
  auto* c = static_cast<Capture*>(arg);
  const _Unwind_Ptr ip = _Unwind_GetIP(uc);
  if (ip == 0) return _URC_END_OF_STACK;
  if (c->skip > 0) {
    --c->skip;
    return _URC_NO_REASON;
  }
  if (c->count == c->max) return _URC_END_OF_STACK;
  c->frames[c->count++] = reinterpret_cast<void*>(ip);
  return _URC_NO_REASON;
}

constexpr std::uintptr_t kCaptureTag = 1;

// Unused where backtrace_of is compiled out (under ASan or TSan).
[[maybe_unused]] void* tag(Capture* c) noexcept {
  return reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(c) | kCaptureTag);
}

}  // namespace

struct Context::Capturer {
  [[gnu::noinline]] static bctx::transfer_t on_top(bctx::transfer_t t) {
    auto* c = static_cast<Capture*>(t.data);
    Context* const ctx = c->ctx;
    for (;;) {
      _Unwind_Backtrace(&record_frame, c);
      t = bctx::jump_fcontext(t.fctx, nullptr);
      const auto data = reinterpret_cast<std::uintptr_t>(t.data);
      if ((data & kCaptureTag) == 0) {
        ctx->in_capture_ = false;
        return t;  // a real resume: hand its transfer to the resume point
      }
      c = reinterpret_cast<Capture*>(data & ~kCaptureTag);
    }
  }
};

std::size_t backtrace_of(Context& ctx, void** frames, std::size_t max) noexcept {
#if defined(__x86_64__) && !SPINDLE_FIBER_ASAN && !SPINDLE_FIBER_TSAN
  if (ctx.fctx_ == nullptr || max == 0) return 0;
  Capture c{&ctx, frames, max};
  const bctx::transfer_t back =
      ctx.in_capture_ ? bctx::jump_fcontext(ctx.fctx_, tag(&c))
                      : bctx::ontop_fcontext(ctx.fctx_, &c, &Context::Capturer::on_top);
  ctx.fctx_ = back.fctx;
  ctx.in_capture_ = true;
  return c.count;
#else
  (void)ctx;
  (void)frames;
  (void)max;
  return 0;
#endif
}

}  // namespace spindle::fiber
