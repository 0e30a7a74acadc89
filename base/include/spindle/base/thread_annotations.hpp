// Lock annotations for clang's thread-safety analysis (-Wthread-safety, on in
// every clang build): which capability (lock) guards which data, and which
// functions take, release or need it. Under any other compiler they expand to
// nothing.
//
// A type that is a lock is SPINDLE_CAPABILITY("name"); its lock() is
// SPINDLE_ACQUIRE(), unlock() SPINDLE_RELEASE(), try_lock()
// SPINDLE_TRY_ACQUIRE(true). A guard that takes a lock for its lifetime is
// SPINDLE_SCOPED_CAPABILITY. Data is SPINDLE_GUARDED_BY(lock); data behind a
// pointer is SPINDLE_PT_GUARDED_BY(lock); a function the caller must call with
// a lock held is SPINDLE_REQUIRES(lock), one it must call without it
// SPINDLE_EXCLUDES(lock). SPINDLE_NO_THREAD_SAFETY_ANALYSIS turns the check
// off for one function: only where a correct protocol is beyond the analysis
// (a lock released by another function after a context switch), with a
// comment saying why it is safe.
#pragma once

#if defined(__clang__)
#define SPINDLE_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define SPINDLE_THREAD_ANNOTATION(x)
#endif

#define SPINDLE_CAPABILITY(name) SPINDLE_THREAD_ANNOTATION(capability(name))
#define SPINDLE_SCOPED_CAPABILITY SPINDLE_THREAD_ANNOTATION(scoped_lockable)
#define SPINDLE_GUARDED_BY(x) SPINDLE_THREAD_ANNOTATION(guarded_by(x))
#define SPINDLE_PT_GUARDED_BY(x) SPINDLE_THREAD_ANNOTATION(pt_guarded_by(x))
#define SPINDLE_ACQUIRED_BEFORE(...) SPINDLE_THREAD_ANNOTATION(acquired_before(__VA_ARGS__))
#define SPINDLE_ACQUIRED_AFTER(...) SPINDLE_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
#define SPINDLE_REQUIRES(...) SPINDLE_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define SPINDLE_ACQUIRE(...) SPINDLE_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define SPINDLE_RELEASE(...) SPINDLE_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define SPINDLE_TRY_ACQUIRE(...) SPINDLE_THREAD_ANNOTATION(try_acquire_capability(__VA_ARGS__))
#define SPINDLE_EXCLUDES(...) SPINDLE_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define SPINDLE_ASSERT_CAPABILITY(x) SPINDLE_THREAD_ANNOTATION(assert_capability(x))
#define SPINDLE_RETURN_CAPABILITY(x) SPINDLE_THREAD_ANNOTATION(lock_returned(x))
#define SPINDLE_NO_THREAD_SAFETY_ANALYSIS SPINDLE_THREAD_ANNOTATION(no_thread_safety_analysis)
