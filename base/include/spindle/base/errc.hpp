// spindle's own error conditions and their std::error_category.
// errno values use std::system_category; these are the conditions errno cannot say.
// Constants and a stateless category object: thread-safe; nothing here suspends.
#pragma once

#include <string>
#include <system_error>

namespace spindle {

enum class errc : int {
  aborted = 1,          // the calling fiber (or the task joined) was aborted
  timed_out,            // a deadline expired before the operation completed
  closed,               // the object (channel, stream, runtime) is closed
  exited,               // the joined task ended by throwing (catch_exceptions = true)
  blob_corrupt,         // a blob's header or contents failed validation
  version_mismatch,     // a blob's version is outside the accepted range
  blob_missing,         // storage: the blob to remove does not exist
  partition_missing,    // storage: the partition does not exist
  partition_invalid,    // storage: a partition name outside [A-Za-z0-9_-]+
  partition_corrupt,    // storage: a partition holds an entry that is not a blob
  insufficient_length,  // storage: a read reaches past the end of the blob
  io_limit,             // the worker has Config::max_io_in_flight operations in flight
  unsupported,          // the runtime's I/O backend cannot perform this operation
  lagged,               // a broadcast receiver fell behind: values it had not read were dropped
  unexpected_eof,       // end of file or stream before the bytes asked for
};

namespace detail {

class ErrcCategory final : public std::error_category {
 public:
  const char* name() const noexcept override { return "spindle"; }
  std::string message(int value) const override {
    switch (static_cast<errc>(value)) {
      case errc::aborted:
        return "aborted";
      case errc::timed_out:
        return "timed out";
      case errc::closed:
        return "closed";
      case errc::exited:
        return "task exited with an exception";
      case errc::blob_corrupt:
        return "blob corrupt";
      case errc::version_mismatch:
        return "blob version mismatch";
      case errc::blob_missing:
        return "blob missing";
      case errc::partition_missing:
        return "partition missing";
      case errc::partition_invalid:
        return "partition name invalid";
      case errc::partition_corrupt:
        return "partition corrupt";
      case errc::insufficient_length:
        return "read past the end of the blob";
      case errc::io_limit:
        return "too many I/O operations in flight on one worker (Config::max_io_in_flight)";
      case errc::unsupported:
        return "not supported by the runtime's I/O backend";
      case errc::lagged:
        return "lagged: values were dropped before this receiver read them";
      case errc::unexpected_eof:
        return "end of file before the bytes asked for";
    }
    return "unknown spindle error";
  }
};

}  // namespace detail

inline const std::error_category& spindle_category() noexcept {
  static const detail::ErrcCategory category;
  return category;
}

inline std::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), spindle_category()};
}

}  // namespace spindle

template <>
struct std::is_error_code_enum<spindle::errc> : std::true_type {};
