// require_kernel_support(): accepts this kernel and reports optional features.

#include "spindle/uring/probe.hpp"

#include <catch2/catch.hpp>
#include <stdexcept>
#include <string>

#include "skip.hpp"
#include "uring_test_support.hpp"

namespace spindle::uring {
namespace {

TEST_CASE("uring probe: require_kernel_support() accepts this kernel", "[uring][ring][probe]") {
  KernelSupport support;
  try {
    support = require_kernel_support();
  } catch (const std::runtime_error& e) {
    if (std::string(e.what()).find("io_uring is unavailable") != std::string::npos) {
      SPINDLE_SKIP("io_uring is not available here: %s", e.what());
    }
    FAIL(e.what());
  }
  if (test::kernel_at_least(6, 1)) CHECK(support.single_issuer_defer_taskrun);
  if (test::kernel_at_least(6, 7)) CHECK(support.op_waitid);
  if (test::kernel_at_least(6, 9)) CHECK(support.op_ftruncate);
}

}  // namespace
}  // namespace spindle::uring
