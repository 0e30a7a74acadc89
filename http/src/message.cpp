#include "spindle/http/message.hpp"

#include "ascii.hpp"

namespace spindle::http {

std::optional<std::string_view> Response::header(std::string_view name) const noexcept {
  for (const Header& h : headers) {
    if (detail::iequals(h.name, name)) return h.value;
  }
  return std::nullopt;
}

}  // namespace spindle::http
