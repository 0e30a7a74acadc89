# Third-party dependencies, all from Debian packages (scripts/bootstrap.sh installs them).
# The minimum versions also go into the installed package (SpindleInstall.cmake).
set(SPINDLE_LIBURING_MIN 2.3)
set(SPINDLE_BOOST_MIN 1.74)
set(SPINDLE_OPENSSL_MIN 3)
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBURING REQUIRED IMPORTED_TARGET liburing>=${SPINDLE_LIBURING_MIN})
# Boost.Stacktrace (libbacktrace backend) symbolizes fiber dumps and stall reports.
find_package(Boost ${SPINDLE_BOOST_MIN} REQUIRED COMPONENTS context stacktrace_backtrace)
find_package(fmt REQUIRED)
# TLS (tls/): OpenSSL 3 (Debian libssl-dev), a vetted implementation of the
# protocol; spindle only moves its bytes.
find_package(OpenSSL ${SPINDLE_OPENSSL_MIN} REQUIRED)
# Metrics (sched/): the core library only (registry, metric types, text format).
find_package(prometheus-cpp CONFIG REQUIRED)
if(SPINDLE_BUILD_APPS OR SPINDLE_BUILD_EXAMPLES)
  find_package(CLI11 REQUIRED)
endif()
if(SPINDLE_BUILD_TESTS)
  find_package(Catch2 2 REQUIRED)
  include(Catch)
endif()
