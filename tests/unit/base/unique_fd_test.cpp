#include "spindle/base/unique_fd.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <utility>

namespace {

bool is_open(int fd) { return ::fcntl(fd, F_GETFD) != -1; }

}  // namespace

TEST_CASE("UniqueFd closes what it owns, once, and hands it over on move", "[base]") {
  int p[2];
  REQUIRE(::pipe(p) == 0);
  const int read_end = p[0];
  {
    spindle::UniqueFd a(p[0]);
    spindle::UniqueFd w(p[1]);
    CHECK(a);
    spindle::UniqueFd b = std::move(a);
    CHECK_FALSE(a);
    CHECK(b.get() == read_end);
    a = std::move(b);
    CHECK(a.get() == read_end);
    const int raw = w.release();
    CHECK_FALSE(w);
    CHECK(is_open(raw));
    w.reset(raw);
    CHECK(w.get() == raw);
    w.reset();
    CHECK_FALSE(is_open(raw));
    CHECK(is_open(read_end));
  }
  CHECK_FALSE(is_open(read_end));
}
