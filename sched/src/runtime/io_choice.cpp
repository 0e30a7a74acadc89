#include "runtime/io_choice.hpp"

#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>

#include "io/epoll_driver.hpp"
#include "io/uring_driver.hpp"
#include "spindle/base/log.hpp"
#include "spindle/uring/probe.hpp"

namespace spindle::detail {
namespace {

IoBackendKind requested(const Config& config) {
  const char* env = std::getenv("SPINDLE_IO_BACKEND");
  if (env == nullptr || *env == '\0') return config.io_backend;
  const std::string_view v(env);
  if (v == "auto") return IoBackendKind::kAuto;
  if (v == "io_uring") return IoBackendKind::kIoUring;
  if (v == "epoll") return IoBackendKind::kEpoll;
  throw std::invalid_argument("spindle: SPINDLE_IO_BACKEND is '" + std::string(v) +
                              "'; it must be auto, io_uring or epoll");
}

}  // namespace

IoChoice choose_io_backend(const Config& config) {
  constexpr IoChoice kUring{&make_uring_backend, "io_uring"};
  constexpr IoChoice kEpoll{&make_epoll_backend, "epoll"};
  switch (requested(config)) {
    case IoBackendKind::kIoUring:
      uring::require_kernel_support();
      return kUring;
    case IoBackendKind::kEpoll:
      return kEpoll;
    case IoBackendKind::kAuto:
      break;
  }
  try {
    uring::require_kernel_support();
    return kUring;
  } catch (const std::exception& e) {
    write_log(config.on_log, LogLevel::kWarning,
              std::string(e.what()) + "; using the epoll backend instead");
    return kEpoll;
  }
}

}  // namespace spindle::detail
