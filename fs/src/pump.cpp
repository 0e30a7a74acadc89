#include "pump.hpp"

#include <fcntl.h>

#include <algorithm>

namespace spindle::fs::detail {

spindle::Result<std::size_t> Pump::run(SplicePipe& pipe, std::size_t len) {
  if (pipe.held_ != 0 || !pipe.write_) {
    auto fresh = SplicePipe::make(pipe.wanted_);
    if (!fresh) return failure(fresh.error().code);
    pipe = std::move(*fresh);
  }
  constexpr std::uint64_t kPosition = io::kStreamOffset;
  auto n = io::splice(in, in_offset, pipe.write_.get(), kPosition, std::min(len, pipe.capacity_), 0,
                      options);
  if (!n || *n == 0) return n;
  if (in_offset != kPosition) in_offset += *n;
  pipe.held_ = *n;
  const unsigned flags = pipe.held_ < len ? SPLICE_F_MORE : 0;
  while (pipe.held_ > 0) {
    auto m = io::splice(pipe.read_.get(), kPosition, out, kPosition, pipe.held_, flags, options);
    if (!m) return failure(m.error());
    // The pipe holds what it took: an empty splice out of it is a fault.
    if (*m == 0) return failure(std::make_error_code(std::errc::io_error));
    pipe.held_ -= *m;
  }
  return *n;
}

}  // namespace spindle::fs::detail
