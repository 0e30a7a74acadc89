# The layers of sched/src, lowest first. A file in sched/src/<layer>/ may
# include the private headers of its own layer and of those below it, always
# by their layer path ("core/worker.hpp"); public headers ("spindle/...") are
# free. Run as a test:
#   cmake -DSRC=<sched/src> -P layers.cmake
#
#   time     the clock, the timer heap, the timing wheel
#   park     a worker thread's sleep: parker, spinner, idle set, mailbox
#   core     workers, queues, the park word, the scheduler, the worker's
#            side of the I/O seam, spawn bookkeeping and the per-worker counters
#   io       I/O operations, how a fiber parks on one, and the backends
#   task     the supervision tree and the calls a fiber makes about itself
#   sync     waiting, and the primitives built on it
#   observe  dumps, the stall detector, symbolizing, the log
#   runtime  Runtime::run: starts and stops everything above
set(layers time park core io task sync observe runtime)

if(NOT DEFINED SRC)
  message(FATAL_ERROR "layers.cmake: pass -DSRC=<path of sched/src>")
endif()
file(GLOB_RECURSE files RELATIVE "${SRC}" "${SRC}/*.cpp" "${SRC}/*.hpp")
set(errors 0)
foreach(rel IN LISTS files)
  string(REGEX MATCH "^[^/]+" layer "${rel}")
  list(FIND layers "${layer}" rank)
  if(rank EQUAL -1 OR rel STREQUAL layer)
    message(SEND_ERROR "sched/src/${rel}: not in a layer folder (${layers})")
    math(EXPR errors "${errors} + 1")
    continue()
  endif()
  file(STRINGS "${SRC}/${rel}" includes REGEX "^#include \"")
  foreach(line IN LISTS includes)
    string(REGEX MATCH "^#include \"([^\"]+)\"" unused "${line}")
    set(header "${CMAKE_MATCH_1}")
    if(header MATCHES "^spindle/")
      continue()
    endif()
    string(REGEX MATCH "^[^/]+" target "${header}")
    list(FIND layers "${target}" target_rank)
    if(target_rank EQUAL -1 OR header STREQUAL target)
      message(SEND_ERROR "sched/src/${rel}: includes \"${header}\", not by a layer path")
      math(EXPR errors "${errors} + 1")
    elseif(target_rank GREATER rank)
      message(SEND_ERROR "sched/src/${rel} (layer ${layer}) includes \"${header}\" "
                         "from the higher layer ${target}")
      math(EXPR errors "${errors} + 1")
    endif()
  endforeach()
endforeach()
if(errors GREATER 0)
  message(FATAL_ERROR "${errors} include(s) break the layering of sched/src")
endif()
