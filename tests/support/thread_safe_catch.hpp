// Catch2 v2 assertions are not thread-safe, and fiber tests assert from every
// worker thread. This header redefines the assertion macros used in tests so
// that the asserted expression is evaluated first, with no lock held (it may
// park the fiber, which may then resume on another thread), and only Catch's
// bookkeeping runs under one process-wide lock. A failing REQUIRE still
// throws: on a fiber the exception ends the fiber and (with the default
// catch_exceptions = false) makes Runtime::run rethrow it on the test thread.
#pragma once

#include <catch2/catch.hpp>
#include <exception>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>

namespace spindle::test {

inline std::recursive_mutex& catch_lock() {
  static std::recursive_mutex m;
  return m;
}

// An assertion's outcome and its expansion. The operands were evaluated with
// no lock held (the expression may park); Catch's stringification shares
// state, so it runs under the lock, while the operands are still alive.
class Evaluated final : public Catch::ITransientExpression {
 public:
  Evaluated(const Catch::ITransientExpression& e)  // NOLINT: implicit on purpose
      : ITransientExpression(e.isBinaryExpression(), e.getResult()) {
    std::lock_guard<std::recursive_mutex> guard(catch_lock());
    std::ostringstream os;
    e.streamReconstructedExpression(os);
    text_ = os.str();
  }
  template <class T>
  Evaluated(const Catch::ExprLhs<T>& lhs)  // NOLINT: implicit on purpose
      : Evaluated(lhs.makeUnaryExpr()) {}
  void streamReconstructedExpression(std::ostream& os) const override { os << text_; }

 private:
  std::string text_;
};

}  // namespace spindle::test

#define SPINDLE_ASSERT_EXPR_(macro, disposition, ...)                                             \
  do {                                                                                            \
    const ::spindle::test::Evaluated spindle_evaluated_(Catch::Decomposer() <= __VA_ARGS__);      \
    std::lock_guard<std::recursive_mutex> spindle_guard_(::spindle::test::catch_lock());          \
    Catch::AssertionHandler spindle_handler_(macro##_catch_sr, CATCH_INTERNAL_LINEINFO,           \
                                             CATCH_INTERNAL_STRINGIFY(__VA_ARGS__), disposition); \
    spindle_handler_.handleExpr(spindle_evaluated_);                                              \
    spindle_handler_.complete();                                                                  \
  } while (false)

// Runs `expr` with no lock held and replays what it threw under the lock.
#define SPINDLE_ASSERT_THROWS_(expr, ...)                                                \
  do {                                                                                   \
    std::exception_ptr spindle_thrown_;                                                  \
    try {                                                                                \
      static_cast<void>(expr);                                                           \
    } catch (...) {                                                                      \
      spindle_thrown_ = std::current_exception();                                        \
    }                                                                                    \
    std::lock_guard<std::recursive_mutex> spindle_guard_(::spindle::test::catch_lock()); \
    __VA_ARGS__;                                                                         \
  } while (false)
#define SPINDLE_REPLAY_ (spindle_thrown_ ? std::rethrow_exception(spindle_thrown_) : (void)0)

#undef CHECK
#undef CHECK_FALSE
#undef REQUIRE
#undef REQUIRE_FALSE
#undef CHECK_THROWS_AS
#undef CHECK_THROWS_WITH
#undef CHECK_NOTHROW
#undef CHECK_THAT
#undef REQUIRE_THAT
#undef FAIL
#define CHECK(...) \
  SPINDLE_ASSERT_EXPR_("CHECK", Catch::ResultDisposition::ContinueOnFailure, __VA_ARGS__)
#define CHECK_FALSE(...)                                                                 \
  SPINDLE_ASSERT_EXPR_(                                                                  \
      "CHECK_FALSE",                                                                     \
      Catch::ResultDisposition::ContinueOnFailure | Catch::ResultDisposition::FalseTest, \
      __VA_ARGS__)
#define REQUIRE(...) SPINDLE_ASSERT_EXPR_("REQUIRE", Catch::ResultDisposition::Normal, __VA_ARGS__)
#define REQUIRE_FALSE(...)                                                                     \
  SPINDLE_ASSERT_EXPR_("REQUIRE_FALSE",                                                        \
                       Catch::ResultDisposition::Normal | Catch::ResultDisposition::FalseTest, \
                       __VA_ARGS__)
#define CHECK_THROWS_AS(expr, exceptionType)                         \
  SPINDLE_ASSERT_THROWS_(expr, INTERNAL_CATCH_THROWS_AS(             \
                                   "CHECK_THROWS_AS", exceptionType, \
                                   Catch::ResultDisposition::ContinueOnFailure, SPINDLE_REPLAY_))
#define CHECK_THROWS_WITH(expr, matcher)                                                   \
  SPINDLE_ASSERT_THROWS_(                                                                  \
      expr, INTERNAL_CATCH_THROWS_STR_MATCHES("CHECK_THROWS_WITH",                         \
                                              Catch::ResultDisposition::ContinueOnFailure, \
                                              matcher, SPINDLE_REPLAY_))
#define CHECK_NOTHROW(expr)                                                                       \
  SPINDLE_ASSERT_THROWS_(                                                                         \
      expr, INTERNAL_CATCH_NO_THROW("CHECK_NOTHROW", Catch::ResultDisposition::ContinueOnFailure, \
                                    SPINDLE_REPLAY_))
// Matchers take an already-computed value: evaluate anything that parks first.
#define CHECK_THAT(arg, matcher)                                                                  \
  do {                                                                                            \
    std::lock_guard<std::recursive_mutex> spindle_guard_(::spindle::test::catch_lock());          \
    INTERNAL_CHECK_THAT("CHECK_THAT", matcher, Catch::ResultDisposition::ContinueOnFailure, arg); \
  } while (false)
#define REQUIRE_THAT(arg, matcher)                                                       \
  do {                                                                                   \
    std::lock_guard<std::recursive_mutex> spindle_guard_(::spindle::test::catch_lock()); \
    INTERNAL_CHECK_THAT("REQUIRE_THAT", matcher, Catch::ResultDisposition::Normal, arg); \
  } while (false)
#define FAIL(...)                                                                        \
  do {                                                                                   \
    std::lock_guard<std::recursive_mutex> spindle_guard_(::spindle::test::catch_lock()); \
    INTERNAL_CATCH_MSG("FAIL", Catch::ResultWas::ExplicitFailure,                        \
                       Catch::ResultDisposition::Normal, __VA_ARGS__);                   \
  } while (false)
