// FiberLocal<T>: a value per fiber, where thread_local would be wrong.
//
// The thread_local rule: a fiber may resume on another worker thread after any
// call that suspends it, so a thread_local read before such a call may belong
// to a different thread after it, and its address must never be kept across
// one. Use FiberLocal for per-fiber state, or PinToWorker (pin.hpp) to keep a
// fiber on one thread while it uses thread_local state.
#pragma once

#include <cstddef>

namespace spindle {
namespace detail {
std::size_t allocate_local_key() noexcept;
// The running fiber's value for `key`, or null. Throws std::logic_error outside a fiber.
void* local_get(std::size_t key);
void local_set(std::size_t key, void* value, void (*destroy)(void*));
}  // namespace detail

// Thread-safe to share; each fiber sees its own T, default-constructed on its
// first get() and destroyed when the fiber ends (on the fiber). Meant to be
// long-lived, like a thread_local: every FiberLocal takes a new key, and keys
// are never reused. get() never suspends (it may allocate).
template <class T>
class FiberLocal {
 public:
  FiberLocal() noexcept : key_(detail::allocate_local_key()) {}
  FiberLocal(const FiberLocal&) = delete;
  FiberLocal& operator=(const FiberLocal&) = delete;

  // Fiber-only.
  T& get() {
    if (void* p = detail::local_get(key_)) return *static_cast<T*>(p);
    auto* value = new T();
    detail::local_set(key_, value, [](void* p) { delete static_cast<T*>(p); });
    return *value;
  }
  T& operator*() { return get(); }
  T* operator->() { return &get(); }

 private:
  std::size_t key_;
};

}  // namespace spindle
