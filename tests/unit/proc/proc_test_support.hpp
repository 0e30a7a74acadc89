// Helpers of the proc tests: the error a joined fiber ended with.
#pragma once

#include <spindle/spindle.hpp>
#include <system_error>

namespace spindle::test {

// The error of a fiber that returned a Result<T>: the join's own (the task
// was aborted), else the Result's; none if it returned a value.
template <class T>
std::error_code joined_error(JoinHandle<Result<T>>& h) {
  auto r = h.join();
  if (!r) return r.error();
  return *r ? std::error_code() : r->error();
}

}  // namespace spindle::test
