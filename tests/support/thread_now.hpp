// thread_now(): the calling thread's id, read anew at every call. A fiber may
// resume on another thread after any call that can park, and within one
// function the compiler may reuse an std::this_thread::get_id() read before
// the park: glibc declares pthread_self const (docs/pitfalls.md, item 1).
// Tests that compare threads across parks read them with this.
#pragma once

#include <thread>

namespace spindle::test {

[[gnu::noinline]] inline std::thread::id thread_now() {
  asm volatile("" ::: "memory");  // not const: the compiler may not fold two calls
  return std::this_thread::get_id();
}

}  // namespace spindle::test
