#include "spindle/fs/error.hpp"

#include <fmt/format.h>

namespace spindle::fs {

std::string Error::message() const {
  if (path2.empty()) return fmt::format("{} {:?}: {}", op, path.string(), code.message());
  return fmt::format("{} {:?} -> {:?}: {}", op, path.string(), path2.string(), code.message());
}

void throw_error(const Error& e) {
  throw std::filesystem::filesystem_error(e.op, e.path, e.path2, e.code);
}

}  // namespace spindle::fs
