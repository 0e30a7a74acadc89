#include "spindle/base/result.hpp"

#include <catch2/catch.hpp>
#include <memory>
#include <system_error>

using spindle::errc;
using spindle::Result;

TEST_CASE("Result value() throws std::system_error carrying the code", "[base]") {
  Result<int> bad = spindle::failure(errc::timed_out);
  REQUIRE_FALSE(bad.has_value());
  try {
    (void)bad.value();
    FAIL("value() did not throw");
  } catch (const std::system_error& e) {
    CHECK(e.code() == errc::timed_out);
  }
  Result<void> bad_void = spindle::failure(errc::aborted);
  CHECK_THROWS_AS(bad_void.value(), std::system_error);
}

TEST_CASE("Result holds values, move-only ones too", "[base]") {
  Result<int> ok = 7;
  CHECK(ok.value() == 7);
  Result<std::unique_ptr<int>> p = std::make_unique<int>(3);
  auto owned = std::move(p).value();
  CHECK(*owned == 3);
  Result<void> v{};
  CHECK(v.has_value());
}

TEST_CASE("spindle errors compare with their enum and name themselves", "[base]") {
  const std::error_code ec = make_error_code(errc::closed);
  CHECK(ec == errc::closed);
  CHECK(ec != errc::aborted);
  CHECK(std::string(ec.category().name()) == "spindle");
  CHECK(ec.message() == "closed");
  CHECK(spindle::errno_failure(EBADF).error() == std::errc::bad_file_descriptor);
}
