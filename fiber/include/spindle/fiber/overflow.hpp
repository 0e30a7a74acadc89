// Stack-overflow reporting: a guard-page hit on a fiber stack is reported, from
// an alternate signal stack, as "fiber stack overflow" naming the fiber, then
// the process aborts.
// Thread-safety: install_overflow_handler() may be called from any thread, at
// any time (installation happens once; the describer is an atomic pointer);
// ensure_signal_stack() acts on the calling thread only. Nothing here blocks
// or suspends.
#pragma once

#include <cstddef>

namespace spindle::fiber {

// Called from the SIGSEGV/SIGBUS handler with the faulting address. Must be
// async-signal-safe. Returns true when `addr` is in the guard region of the
// stack of the fiber running on this thread, after writing a short
// NUL-terminated description of that fiber (for example "fiber 42 'worker'")
// into out[0..cap).
using OverflowDescriber = bool (*)(const void* addr, char* out, std::size_t cap);

// Installs the process-wide SIGSEGV and SIGBUS handler once (later calls only
// replace the describer). A fault the describer does not claim is passed to the
// previously installed handler, or to the default action.
void install_overflow_handler(OverflowDescriber describe);

// Gives the calling thread an alternate signal stack if it has none, so the
// handler can run after the fiber's stack is exhausted. Call on every thread
// that runs fibers. The stack is freed when the thread exits.
void ensure_signal_stack();

}  // namespace spindle::fiber
