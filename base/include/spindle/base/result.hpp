// Result<T>: the return type of every call that can fail or park.
// A plain value type (as thread-safe as std::expected); nothing here suspends.
#pragma once

#include <expected>
#include <system_error>
#include <type_traits>
#include <utility>

#include "spindle/base/errc.hpp"

namespace spindle {

// A std::expected<T, std::error_code> whose value() throws std::system_error
// carrying the error code, so callers who prefer exceptions get them per call.
template <class T>
class [[nodiscard]] Result : public std::expected<T, std::error_code> {
  using Base = std::expected<T, std::error_code>;

 public:
  using Base::Base;
  Result(Base b) : Base(std::move(b)) {}

  decltype(auto) value() & { return checked(*this); }
  decltype(auto) value() const& { return checked(*this); }
  decltype(auto) value() && { return checked(std::move(*this)); }

 private:
  template <class Self>
  static decltype(auto) checked(Self&& self) {
    if (!self.has_value()) throw std::system_error(self.error());
    if constexpr (std::is_void_v<T>) {
      return;
    } else {
      return *std::forward<Self>(self);
    }
  }
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
