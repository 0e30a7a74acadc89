// OnceCell<T>: a value initialized exactly once, on first use, among fibers
// and plain threads.
#pragma once

#include <functional>
#include <optional>
#include <utility>

#include "spindle/sched/once.hpp"

namespace spindle {

// Thread-safe. get_or_init(fn) stores fn's result the first time; concurrent
// callers wait for it, and later ones get the stored value. If fn throws, the
// cell stays empty, the exception propagates to that caller, and the longest-
// waiting caller (or the next one) runs its own fn (Once's policy). A plain
// thread blocks on a futex where a fiber parks. get() never suspends.
template <class T>
class OnceCell {
 public:
  OnceCell() = default;
  OnceCell(const OnceCell&) = delete;
  OnceCell& operator=(const OnceCell&) = delete;

  // The value, or null while the cell is empty.
  T* get() noexcept { return once_.done() ? &*value_ : nullptr; }
  const T* get() const noexcept { return once_.done() ? &*value_ : nullptr; }

  // The value, made by fn() (a T, or what constructs one) if the cell is
  // empty. Abort does not end the wait (Once::call).
  // Suspends: while another caller runs its fn.
  template <class F>
  T& get_or_init(F&& fn) {
    once_.call([&] { value_.emplace(std::invoke(std::forward<F>(fn))); });
    return *value_;
  }

 private:
  Once once_;
  // Written only by the call that completes once_, before it completes; read
  // only after once_.done().
  std::optional<T> value_;
};

}  // namespace spindle
