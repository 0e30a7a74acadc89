// Which sanitizer this translation unit is built with, as SPINDLE_FIBER_ASAN and
// SPINDLE_FIBER_TSAN (0 or 1), and their fiber-switch interfaces when present.
#pragma once

#if defined(SPINDLE_ASAN) || defined(__SANITIZE_ADDRESS__)
#define SPINDLE_FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SPINDLE_FIBER_ASAN 1
#endif
#endif
#ifndef SPINDLE_FIBER_ASAN
#define SPINDLE_FIBER_ASAN 0
#endif

#if defined(SPINDLE_TSAN) || defined(__SANITIZE_THREAD__)
#define SPINDLE_FIBER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SPINDLE_FIBER_TSAN 1
#endif
#endif
#ifndef SPINDLE_FIBER_TSAN
#define SPINDLE_FIBER_TSAN 0
#endif

#if SPINDLE_FIBER_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if SPINDLE_FIBER_TSAN
#include <sanitizer/tsan_interface.h>
#endif
