#include <stdexcept>
#include <string>

#include "runtime_harness.hpp"

TEST_CASE("net settings in Config are validated", "[net][config]") {
  for (std::size_t bad : {std::size_t{0}, (std::size_t{1} << 30) + 1}) {
    INFO("read_buffer_size " << bad);
    spindle::Config c;
    c.read_buffer_size = bad;
    CHECK_THROWS_WITH(spindle::Runtime(c), Catch::Contains("read_buffer_size"));
  }
  spindle::Config ok;
  ok.read_buffer_size = 1;
  CHECK_NOTHROW(spindle::Runtime(ok));
  CHECK(spindle::Config{}.read_buffer_size == 64 * 1024);
  CHECK(spindle::Config{}.tcp_nodelay);
  CHECK(spindle::Config{}.zero_linger);
}
