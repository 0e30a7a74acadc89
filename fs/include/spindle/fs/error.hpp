// fs::Error and fs::Result<T>: how every call of spindle::fs fails. An error
// is the errno (or a spindle::errc) as a std::error_code, with the operation
// and the path it concerns, so its message names the file:
//
//   open "/etc/app.toml": No such file or directory
//   rename "a.tmp" -> "a": File exists
//
// Compare an error as a std::error_code (`r.error() == std::errc::
// file_exists`, `r.error() == spindle::errc::aborted`, `r.error().code`);
// `value()` on a failed Result throws std::filesystem::filesystem_error,
// a std::system_error carrying the code and both paths.
// Plain value types (as thread-safe as std::expected); nothing here suspends.
#pragma once

#include <expected>
#include <filesystem>
#include <string>
#include <system_error>
#include <type_traits>
#include <utility>

#include "spindle/base/errc.hpp"
#include "spindle/base/result.hpp"

namespace spindle::fs {

// What failed, and on which path.
struct Error {
  // The errno in std::system_category, or a spindle::errc (aborted,
  // timed_out, unexpected_eof, ...).
  std::error_code code;
  // The call that failed, a string literal: "open", "read", "rename", ...
  const char* op = "";
  // The path the call concerns: a File's the one it was opened with (empty
  // for a File made from an fd without a name).
  std::filesystem::path path;
  // The second path of a rename or a copy, else empty.
  std::filesystem::path path2;

  // `op "path": message`, or `op "path" -> "path2": message`.
  std::string message() const;

  friend bool operator==(const Error& e, const std::error_code& c) noexcept { return e.code == c; }
  // e == std::errc::..., e == spindle::errc::...: compares the code.
  template <class E>
    requires std::is_error_code_enum_v<E> || std::is_error_condition_enum_v<E>
  friend bool operator==(const Error& e, E value) noexcept {
    return e.code == value;
  }
};

// The filesystem_error that Result::value() throws for `e`.
[[noreturn]] void throw_error(const Error& e);

// A std::expected<T, Error> whose value() throws
// std::filesystem::filesystem_error (a std::system_error) for an error.
template <class T>
class [[nodiscard]] Result : public std::expected<T, Error> {
  using Base = std::expected<T, Error>;

 public:
  using Base::Base;
  Result(Base b) : Base(std::move(b)) {}

  decltype(auto) value() & { return spindle::detail::value_or_raise(*this, throw_error); }
  decltype(auto) value() const& { return spindle::detail::value_or_raise(*this, throw_error); }
  decltype(auto) value() && {
    return spindle::detail::value_or_raise(std::move(*this), throw_error);
  }
};

namespace detail {

inline std::unexpected<Error> fail(std::error_code code, const char* op, std::filesystem::path path,
                                   std::filesystem::path path2 = {}) {
  return std::unexpected<Error>(Error{code, op, std::move(path), std::move(path2)});
}

}  // namespace detail
}  // namespace spindle::fs
