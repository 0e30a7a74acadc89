# The perf smoke test: `spindle-perf --quick` must succeed and write the
# expected number of JSON rows. Timing is never checked.
# cmake -DPERF=<spindle-perf> -DJSON=<file> -DROWS=<n> -P smoke.cmake
# ROWS counts every row but the two that spindle-perf writes only where what
# they run is there, which is looked up here the same way: fio's file_randread
# row (fio on PATH) and cp's file_copy row (cp takes --reflink=never).
file(REMOVE "${JSON}")
execute_process(COMMAND "${PERF}" --quick --json "${JSON}" RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "spindle-perf --quick failed: ${rc}")
endif()
if(NOT EXISTS "${JSON}")
  message(FATAL_ERROR "spindle-perf --quick wrote no ${JSON}")
endif()

find_program(FIO fio PATHS ENV PATH NO_DEFAULT_PATH NO_CACHE)
find_program(CP cp PATHS ENV PATH NO_DEFAULT_PATH NO_CACHE)
set(cp_never FALSE)
if(CP)
  execute_process(COMMAND "${CP}" --reflink=never --version RESULT_VARIABLE cp_rc
                  OUTPUT_QUIET ERROR_QUIET)
  if(cp_rc EQUAL 0)
    set(cp_never TRUE)
  endif()
endif()

file(STRINGS "${JSON}" lines REGEX "^{\"workload\":")
list(LENGTH lines count)
set(other_count ${count})
set(errors "")
# One optional row: `workload` by `impl`, expected exactly when `present`.
function(expect_optional workload impl present why)
  file(STRINGS "${JSON}" found REGEX "^{\"workload\":\"${workload}\",\"impl\":\"${impl}\"")
  list(LENGTH found n)
  if(${present})
    set(want 1)
  else()
    set(want 0)
  endif()
  if(NOT n EQUAL want)
    set(errors "${errors} ${workload}/${impl}: ${n} rows, expected ${want} (${why});" PARENT_SCOPE)
  endif()
  math(EXPR left "${other_count} - ${n}")
  set(other_count ${left} PARENT_SCOPE)
endfunction()

expect_optional(file_randread fio FIO "fio: '${FIO}'")
expect_optional(file_copy cp cp_never "cp takes --reflink=never: ${cp_never}")

if(NOT other_count EQUAL ROWS)
  set(errors "${errors} ${other_count} other rows, expected ${ROWS};")
endif()
if(errors)
  message(FATAL_ERROR "${JSON}:${errors}")
endif()
message(STATUS "spindle-perf --quick: ${count} rows")
