// Case-insensitive ASCII comparison, for header names and URL schemes.
#pragma once

#include <algorithm>
#include <cctype>
#include <string_view>

namespace spindle::http::detail {

inline bool iequals(std::string_view a, std::string_view b) noexcept {
  return std::ranges::equal(a, b, [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) ==
           std::tolower(static_cast<unsigned char>(y));
  });
}

}  // namespace spindle::http::detail
