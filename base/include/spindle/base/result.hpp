// Result<T>: the return type of every call that can fail or park.
// A plain value type (as thread-safe as std::expected); nothing here suspends.
#pragma once

#include <expected>
#include <system_error>
#include <type_traits>
#include <utility>

#include "spindle/base/errc.hpp"

namespace spindle {

namespace detail {

// The value of the std::expected `self` (nothing for void), or what
// `raise(self.error())` throws: the value() of a Result type.
template <class Self, class Raise>
decltype(auto) value_or_raise(Self&& self, Raise raise) {
  if (!self.has_value()) raise(self.error());
  if constexpr (std::is_void_v<typename std::remove_cvref_t<Self>::value_type>) {
    return;
  } else {
    return *std::forward<Self>(self);
  }
}

}  // namespace detail

// A std::expected<T, std::error_code> whose value() throws std::system_error
// carrying the error code, so callers who prefer exceptions get them per call.
template <class T>
class [[nodiscard]] Result : public std::expected<T, std::error_code> {
  using Base = std::expected<T, std::error_code>;

 public:
  using Base::Base;
  Result(Base b) : Base(std::move(b)) {}

  decltype(auto) value() & { return detail::value_or_raise(*this, raise); }
  decltype(auto) value() const& { return detail::value_or_raise(*this, raise); }
  decltype(auto) value() && { return detail::value_or_raise(std::move(*this), raise); }

 private:
  [[noreturn]] static void raise(const std::error_code& e) { throw std::system_error(e); }
};

inline std::unexpected<std::error_code> failure(std::error_code ec) noexcept {
  return std::unexpected<std::error_code>(ec);
}
inline std::unexpected<std::error_code> failure(errc e) noexcept {
  return std::unexpected<std::error_code>(make_error_code(e));
}
// From a positive errno value.
inline std::unexpected<std::error_code> errno_failure(int err) noexcept {
  return std::unexpected<std::error_code>(std::error_code(err, std::system_category()));
}

}  // namespace spindle
