// Pump: one splice from an fd into a SplicePipe and as many out of it as
// it takes into another fd, the step of copy() and send_file(). Private to
// fs/.
#pragma once

#include <cstdint>

#include "spindle/base/result.hpp"
#include "spindle/fs/splice_pipe.hpp"
#include "spindle/sched/io.hpp"

namespace spindle::fs::detail {

struct Pump {
  int in;
  std::uint64_t in_offset;  // advanced by what moves; io::kStreamOffset: the position
  int out;
  std::uint64_t out_offset;  // likewise
  IoOptions in_options;      // of the splice into the pipe
  IoOptions out_options;     // of the splices out of it

  // Moves up to `len` bytes from `in` to `out` through `pipe`: the bytes
  // moved, 0 at the end of `in`. `more` (SPLICE_F_MORE): more follows, so
  // a socket may hold back a partial packet. An error may leave bytes in
  // the pipe, which is then made anew at its next use.
  // Suspends: through each splice.
  spindle::Result<std::size_t> run(SplicePipe& pipe, std::size_t len, bool more);
};

}  // namespace spindle::fs::detail
