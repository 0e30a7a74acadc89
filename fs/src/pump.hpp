// Pump: one splice from a file into a SplicePipe and as many out of it as
// it takes into a socket, the step of send_file(). Private to fs/.
#pragma once

#include <cstdint>

#include "spindle/base/result.hpp"
#include "spindle/fs/splice_pipe.hpp"
#include "spindle/sched/io.hpp"

namespace spindle::fs::detail {

struct Pump {
  int in;
  std::uint64_t in_offset;  // advanced by what moves; io::kStreamOffset: the position
  int out;                  // written at its position (a socket has no other)
  IoOptions options;        // of every splice

  // Moves up to `len` bytes from `in` to `out` through `pipe`: the bytes
  // moved, 0 at the end of `in`. The splices out of the pipe say
  // SPLICE_F_MORE unless they carry the last of `len`, so a socket may hold
  // back a partial packet. An error may leave bytes in the pipe, which is
  // then made anew at its next use.
  // Suspends: through each splice.
  spindle::Result<std::size_t> run(SplicePipe& pipe, std::size_t len);
};

}  // namespace spindle::fs::detail
