// Helpers of the proc tests: skipping where a program is missing, and the
// error a joined fiber ended with.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <initializer_list>
#include <spindle/spindle.hpp>
#include <string>
#include <string_view>
#include <system_error>

#include "skip.hpp"

namespace spindle::test {

// Whether `name` is an executable file in a directory of PATH.
inline bool on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string_view dirs = path != nullptr ? path : "/usr/bin:/bin";
  while (!dirs.empty()) {
    const std::size_t colon = dirs.find(':');
    const std::string dir(dirs.substr(0, colon));
    if (!dir.empty() && ::access((dir + "/" + name).c_str(), X_OK) == 0) return true;
    dirs = colon == std::string_view::npos ? std::string_view() : dirs.substr(colon + 1);
  }
  return false;
}

// Skips the test unless /bin/sh and every program of `names` are there.
inline void require_programs(std::initializer_list<const char*> names) {
  if (::access("/bin/sh", X_OK) != 0) SPINDLE_SKIP("/bin/sh is missing");
  for (const char* name : names) {
    if (!on_path(name)) SPINDLE_SKIP("%s is not on PATH", name);
  }
}

// The error of a fiber that returned a Result<T>: the join's own (the task
// was aborted), else the Result's; none if it returned a value.
template <class T>
std::error_code joined_error(JoinHandle<Result<T>>& h) {
  auto r = h.join();
  if (!r) return r.error();
  return *r ? std::error_code() : r->error();
}

}  // namespace spindle::test
