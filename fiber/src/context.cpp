// The context switch, on Boost.Context's fcontext.
//
// Protocol. Every jump carries a Hop {from, to, data} that lives on the
// switcher's stack. The side that the jump resumes (a switch_context call that
// returns, or the start trampoline of a new fiber) reads the Hop first thing and
// stores the switcher's fcontext into from->fctx_: the switcher becomes
// resumable only once another stack is running, which is the only moment its
// fcontext exists. The Hop is read before anything else runs on the resumed
// side, so it is still intact even when it sits on a stack that exit_to() has
// given up.
//
// Sanitizers. This file is the only place that changes stacks, so it is the
// only place that tells ASan (start/finish_switch_fiber: which stack is current,
// and the fake stack of the fiber being left) and TSan (switch_to_fiber: whose
// shadow state is current) about it. A thread's own stack bounds are unknown
// until ASan reports them in finish_switch_fiber on the first switch away from
// it; they are recorded in its Context then. Without sanitizers every hook
// compiles to nothing.
//
// The x86-64 fast path. jump_fcontext is entered with a call but resumes the
// other side with an indirect jmp, so every switch leaves the switcher's
// return address on the return-stack predictor, and every ret after a resume
// is predicted one frame off: two mispredicted returns per switch (a yield
// of one fiber to another took ~90 ns here, ~55 ns without them). Without
// sanitizers, switch_context therefore tail-calls an assembly routine that
// does jump_fcontext's work inline, in its frame layout, and resumes its own
// side with a plain ret when the switcher came from the same call site. Fibers
// that suspend and resume through the same calls (two fibers yielding to each
// other, a channel's sender and receiver) then find their return addresses on
// the predictor where the switcher left its own. Sanitizer builds and other
// architectures use the C++ version.
//
// Rejected: boost::context::fiber (a move-only handle consumed by every resume,
// resume_with to learn who switched, forced_unwind exceptions to end a fiber:
// an ownership model the scheduler does not want, for no gain over the raw
// jump); ucontext (swapcontext makes a sigprocmask syscall per switch); an
// inline switch in the public header (it would expose Boost.Context to every
// user of spindle::fiber).

#include "spindle/fiber/context.hpp"

#include <boost/context/detail/fcontext.hpp>
#include <cstddef>
#include <cstdint>

#include "sanitizers.hpp"
#include "spindle/base/assert.hpp"

#if defined(__x86_64__) && !SPINDLE_FIBER_ASAN && !SPINDLE_FIBER_TSAN
#define SPINDLE_FIBER_ASM_SWITCH 1
#else
#define SPINDLE_FIBER_ASM_SWITCH 0
#endif

// The Hop must be on the real stack: ASan's detect_stack_use_after_return
// would move an instrumented frame's locals to a fake stack, and exit_to()
// destroys the leaving fiber's fake stack before the Hop is read.
#if SPINDLE_FIBER_ASAN
#define SPINDLE_FIBER_REAL_FRAME __attribute__((no_sanitize_address))
#else
#define SPINDLE_FIBER_REAL_FRAME
#endif

#if SPINDLE_FIBER_ASM_SWITCH
// void* spindle_fiber_switch(Context& from, Context& to, void* data): the
// switch_context protocol with the Hop at 0(%rsp). Relies on the layouts
// checked by the static_asserts in Context::Access.
extern "C" void* spindle_fiber_switch(spindle::fiber::Context& from, spindle::fiber::Context& to,
                                      void* data) noexcept;
asm(R"(
  .pushsection .text
  .p2align 4
  .globl spindle_fiber_switch
  .hidden spindle_fiber_switch
  .type spindle_fiber_switch, @function
spindle_fiber_switch:
  .cfi_startproc
  subq $24, %rsp
  .cfi_adjust_cfa_offset 24
  movq %rdi, 0(%rsp)
  movq %rsi, 8(%rsp)
  movq %rdx, 16(%rsp)
  movq (%rsi), %r8
  movq $0, (%rsi)
  movq %rsp, %rsi
  leaq 1f(%rip), %rax
  pushq %rax
  .cfi_remember_state
  .cfi_adjust_cfa_offset 8
  leaq -0x38(%rsp), %rsp
  .cfi_adjust_cfa_offset 0x38
  stmxcsr (%rsp)
  fnstcw 0x4(%rsp)
  movq %r12, 0x8(%rsp)
  movq %r13, 0x10(%rsp)
  movq %r14, 0x18(%rsp)
  movq %r15, 0x20(%rsp)
  movq %rbx, 0x28(%rsp)
  movq %rbp, 0x30(%rsp)
  movq %rsp, %rax
  movq %r8, %rsp
  movq 0x38(%rsp), %r8
  ldmxcsr (%rsp)
  fldcw 0x4(%rsp)
  movq 0x8(%rsp), %r12
  movq 0x10(%rsp), %r13
  movq 0x18(%rsp), %r14
  movq 0x20(%rsp), %r15
  movq 0x28(%rsp), %rbx
  movq 0x30(%rsp), %rbp
  leaq 0x40(%rsp), %rsp
  movq %rsi, %rdx
  movq %rax, %rdi
  jmp *%r8
  .cfi_restore_state
  nop
1:
  movq 0(%rdx), %rcx
  movq %rax, (%rcx)
  movq 16(%rdx), %rax
  movq 24(%rdx), %rcx
  addq $24, %rsp
  .cfi_adjust_cfa_offset -24
  cmpq (%rsp), %rcx
  jne 2f
  ret
2:
  popq %rcx
  .cfi_adjust_cfa_offset -8
  .cfi_register 16, 2
  jmp *%rcx
  .cfi_endproc
  .size spindle_fiber_switch, .-spindle_fiber_switch
  .popsection
)");
// Line by line: Hop {from, to, data} at 0(%rsp); take to->fctx_ and clear it
// (a running context has no saved state); then what jump_fcontext does, with
// its frame layout (so contexts made by make_fcontext, and those resumed by
// jump_fcontext or ontop_fcontext, work unchanged), except that the resume
// address (label 1) is pushed rather than called to (an unwinder looks up the
// byte before it: the nop, with this frame's own CFI); jump to the other side
// with %rax = our fcontext and %rdx = %rsi = our Hop. Once resumed, %rdx is
// the switcher's Hop and %rax its fcontext: store that into
// hop->from->fctx_ and return hop->data: with ret if the switcher was called
// from where we were (its return address, just above its Hop, is ours), so the
// predictor's top entry is right; else with pop+jmp, which the indirect
// predictor learns (a fiber and the worker loop taking turns). Both return to
// the address on our stack, so the compare only picks the predictor: after
// exit_to, whose Hop sits in a C++ frame, it compares whatever lies there.
#endif

namespace spindle::fiber {
namespace bctx = boost::context::detail;

namespace {

// What crosses one jump. Lives on the switcher's stack.
struct Hop {
  Context* from;
  Context* to;
  void* data;
};

constexpr std::uintptr_t kCacheLine = 64;
constexpr std::uintptr_t kStartLines = 16;

// Offset of the next new fiber's first frame below its stack base: a multiple
// of the cache line in [0, 16) lines. Stepping by 5 (coprime with 16) visits
// every offset, so fibers made one after another do not share L1 sets at the
// top of their stacks.
std::uintptr_t next_start_offset() noexcept {
  thread_local std::uintptr_t counter = 0;
  counter += 5;
  return (counter % kStartLines) * kCacheLine;
}

}  // namespace

struct Context::Access {
  // The assembly switch hard-codes these.
  static_assert(offsetof(Context, fctx_) == 0);
  static_assert(offsetof(Hop, from) == 0 && offsetof(Hop, to) == 8 && offsetof(Hop, data) == 16);
  static_assert(sizeof(Hop) == 24);

  // Called on the leaving side right before the jump. `fake_stack_save` is where
  // ASan parks the leaving fiber's fake stack, or nullptr when it never returns.
  static void before_jump(Context& to, void** fake_stack_save) noexcept {
#if SPINDLE_FIBER_ASAN
    __sanitizer_start_switch_fiber(fake_stack_save, to.stack_bottom_, to.stack_size_);
#else
    (void)fake_stack_save;
#endif
#if SPINDLE_FIBER_TSAN
    __tsan_switch_to_fiber(to.tsan_fiber_, 0);
#endif
    (void)to;
  }

  // Called first thing on the resumed side. Returns the switcher's data.
  static void* after_jump(void* fake_stack, bctx::transfer_t t) noexcept {
    const Hop* hop = static_cast<const Hop*>(t.data);
    Context* switcher = hop->from;
    void* data = hop->data;
    switcher->fctx_ = t.fctx;
#if SPINDLE_FIBER_ASAN
    __sanitizer_finish_switch_fiber(fake_stack, &switcher->stack_bottom_, &switcher->stack_size_);
#else
    (void)fake_stack;
#endif
    return data;
  }

  // First frame of every new fiber. The first switch's data is not delivered:
  // the fiber gets its arg instead.
  [[noreturn]] static void start(bctx::transfer_t t) noexcept {
    Context* self = static_cast<const Hop*>(t.data)->to;
    after_jump(nullptr, t);
    self->entry_(self->arg_);
    detail::assert_fail("entry returned", "a fiber must end with exit_to()", __FILE__, __LINE__);
  }

  static void* take_fctx(Context& to) noexcept {
    void* fctx = to.fctx_;
    SPINDLE_DCHECK(fctx != nullptr, "switch to a context that is not suspended");
    to.fctx_ = nullptr;  // running contexts have no saved state
    return fctx;
  }

  static void check_suspended([[maybe_unused]] const Context& to) noexcept {
    SPINDLE_DCHECK(to.fctx_ != nullptr, "switch to a context that is not suspended");
  }
};

Context::Context() noexcept {
#if SPINDLE_FIBER_TSAN
  tsan_fiber_ = __tsan_get_current_fiber();
#endif
}

Context::Context(const Stack& stack, Entry entry, void* arg) noexcept
    : entry_(entry), arg_(arg), stack_bottom_(stack.limit), stack_size_(stack.size()) {
  SPINDLE_DCHECK(stack, "fiber context without a stack");
  const std::uintptr_t base = reinterpret_cast<std::uintptr_t>(stack.base) & ~std::uintptr_t{15};
  const std::uintptr_t sp = base - next_start_offset();
  const std::size_t size = sp - reinterpret_cast<std::uintptr_t>(stack.limit);
  fctx_ = bctx::make_fcontext(reinterpret_cast<void*>(sp), size, &Access::start);
#if SPINDLE_FIBER_ASAN
  // A previous fiber on this stack may have ended with poisoned frames (those
  // of exit_to's callers never return).
  __asan_unpoison_memory_region(stack.limit, stack.size());
#endif
#if SPINDLE_FIBER_TSAN
  tsan_fiber_ = __tsan_create_fiber(0);
  owns_tsan_fiber_ = true;
#endif
}

Context::~Context() {
#if SPINDLE_FIBER_TSAN
  if (owns_tsan_fiber_) __tsan_destroy_fiber(tsan_fiber_);
#endif
}

SPINDLE_FIBER_REAL_FRAME void* switch_context(Context& from, Context& to, void* data) noexcept {
#if SPINDLE_FIBER_ASM_SWITCH
  Context::Access::check_suspended(to);
  return spindle_fiber_switch(from, to, data);  // a tail call in optimized builds
#else
  Hop hop{&from, &to, data};
  void* target = Context::Access::take_fctx(to);
  Context::Access::before_jump(to, &from.asan_fake_stack_);
  const bctx::transfer_t t = bctx::jump_fcontext(target, &hop);
  return Context::Access::after_jump(from.asan_fake_stack_, t);
#endif
}

SPINDLE_FIBER_REAL_FRAME void exit_to(Context& from, Context& to, void* data) noexcept {
  Hop hop{&from, &to, data};
  void* target = Context::Access::take_fctx(to);
  Context::Access::before_jump(to, nullptr);
  bctx::jump_fcontext(target, &hop);
  detail::assert_fail("exit_to", "a finished context was resumed", __FILE__, __LINE__);
}

}  // namespace spindle::fiber
