// Helpers for tests of a blocking call and abort: how the call ends when its
// fiber is aborted while parked in it, or before it is made. Run from a fiber
// (the root of spindle::test::on_workers); never suspends longer than the
// hang guard of eventually().
#pragma once

#include <atomic>
#include <chrono>
#include <spindle/spindle.hpp>
#include <system_error>

#include "runtime_harness.hpp"

namespace spindle::test {

// Runs `call` (returning a Result) on a new fiber, lets it park, aborts the
// fiber, and returns the error `call` ended with (empty if it succeeded).
template <class Call>
std::error_code abort_parked(Call call) {
  std::atomic<bool> started{false};
  std::error_code error;  // written by the fiber before it ends, read after join
  auto h = spawn([&] {
    started = true;
    if (auto r = call(); !r) error = r.error();
  });
  if (!eventually([&] { return started.load(); })) return {};
  (void)this_fiber::sleep_for(kSettle);  // let it park (if not, the abort lands on entry)
  h.abort();
  (void)h.join();
  return error;
}

// Runs `call` on a fiber already aborted (its sleep ended by the abort), and
// returns the error `call` ended with (empty if it succeeded).
template <class Call>
std::error_code abort_before(Call call) {
  std::atomic<bool> started{false};
  std::error_code error;
  auto h = spawn([&] {
    started = true;
    (void)this_fiber::sleep_for(std::chrono::seconds(10));  // ends early with the abort
    if (auto r = call(); !r) error = r.error();
  });
  if (!eventually([&] { return started.load(); })) return {};
  h.abort();
  (void)h.join();
  return error;
}

}  // namespace spindle::test
